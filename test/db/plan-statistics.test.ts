import { afterEach, describe, expect, it } from 'vitest';
import { ANALYZED_TABLES, PlanStatistics } from '../../src/db/plan-statistics.js';

/** A database stand-in: the resource table's state, and the statements run. */
function fakeDatabase(state: { analyzed: boolean; rows: number }) {
  const statements: string[] = [];
  return {
    statements,
    analyzes: () => statements.filter((sql) => sql.startsWith('ANALYZE')),
    db: {
      query: async <R>(sql: string): Promise<R[]> => {
        statements.push(sql);
        return [{ analyzed: state.analyzed, rows: state.rows }] as R[];
      },
      exec: async (sql: string): Promise<void> => {
        statements.push(sql);
        if (sql.startsWith('ANALYZE')) state.analyzed = true;
      },
    },
  };
}

const open: PlanStatistics[] = [];
function statisticsOf(db: ReturnType<typeof fakeDatabase>['db']): PlanStatistics {
  const statistics = new PlanStatistics(db);
  open.push(statistics);
  return statistics;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((statistics) => statistics.close()));
});

describe('planner statistics of the embedded database', () => {
  it('analyzes the search tables, with a bounded sample, once 50 writes have been made', async () => {
    const fake = fakeDatabase({ analyzed: true, rows: 50 });
    const statistics = statisticsOf(fake.db);
    for (let i = 0; i < 49; i++) statistics.noteWrite();
    expect(await statistics.analyzeIfDue()).toBe(false);
    expect(fake.analyzes()).toEqual([]);

    statistics.noteWrite();
    expect(await statistics.analyzeIfDue()).toBe(true);
    expect(fake.analyzes()).toEqual(ANALYZED_TABLES.map((table) => `ANALYZE ${table}`));
    expect(fake.statements).toContain('SET default_statistics_target = 50');
    expect(fake.statements.at(-1)).toBe('RESET default_statistics_target');
  });

  it('waits for 50 + 10% of the resources counted at the last run before the next', async () => {
    const fake = fakeDatabase({ analyzed: true, rows: 1000 });
    const statistics = statisticsOf(fake.db);
    for (let i = 0; i < 50; i++) statistics.noteWrite();
    expect(await statistics.analyzeIfDue()).toBe(true);

    for (let i = 0; i < 149; i++) statistics.noteWrite();
    expect(await statistics.analyzeIfDue()).toBe(false);
    statistics.noteWrite();
    expect(await statistics.analyzeIfDue()).toBe(true);
    expect(fake.analyzes()).toHaveLength(2 * ANALYZED_TABLES.length);
  });

  it('analyzes at start a database that has resources but was never analyzed', async () => {
    const fake = fakeDatabase({ analyzed: false, rows: 10 });
    const statistics = statisticsOf(fake.db);
    statistics.start();
    await statistics.analyzeIfDue();
    expect(fake.analyzes()).toHaveLength(ANALYZED_TABLES.length);
  });

  it('leaves alone at start a database that has statistics, or no resources', async () => {
    for (const state of [{ analyzed: true, rows: 10 }, { analyzed: false, rows: 0 }]) {
      const fake = fakeDatabase(state);
      const statistics = statisticsOf(fake.db);
      statistics.start();
      await statistics.analyzeIfDue();
      expect(fake.analyzes()).toEqual([]);
    }
  });
});
