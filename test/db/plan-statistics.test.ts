import { afterEach, describe, expect, it } from 'vitest';
import { ANALYZED_TABLES, PlanStatistics } from '../../src/db/plan-statistics.js';
import { migrate } from '../../src/db/migrate.js';
import { openPGlite } from '../../src/db/pglite.js';

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
function statisticsOf(db: ConstructorParameters<typeof PlanStatistics>[0]): PlanStatistics {
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

describe('planner statistics of the embedded database, on the embedded database', () => {
  it('analyzes the tables in which a type the statistics did not see reaches 500 rows, far below 10% of the resources', async () => {
    const pglite = await openPGlite('memory://');
    const db = {
      query: async <R>(sql: string, args: readonly unknown[] = []) => (await pglite.query<R>(sql, [...args])).rows,
      exec: async (sql: string) => void (await pglite.exec(sql)),
    };
    await migrate({
      transaction: (work) =>
        pglite.transaction((tx) =>
          work({
            query: async <R>(sql: string, args: readonly unknown[] = []) => (await tx.query<R>(sql, [...args])).rows,
            execute: async (sql: string, args: readonly unknown[] = []) => (await tx.query(sql, [...args])).affectedRows ?? 0,
          }),
        ),
    });
    const insert = async (type: string, count: number) => {
      await db.query(
        `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
         SELECT $2::text, gen_random_uuid()::text, 'p', gen_random_uuid(), now(), false, json_build_object('resourceType', $2::text)
         FROM generate_series(1, $1::int)`,
        [count, type],
      );
      for (let i = 0; i < count; i++) statistics.noteWrite();
    };
    const believedPractitioners = async () => {
      const [row] = await db.query<{ 'QUERY PLAN': { Plan: { 'Plan Rows': number } }[] }>(
        `EXPLAIN (FORMAT JSON) SELECT 1 FROM resource WHERE "resourceType" = 'Practitioner'`,
      );
      return row['QUERY PLAN'][0].Plan['Plan Rows'];
    };
    const statistics = statisticsOf(db);
    try {
      await insert('Patient', 20_000);
      expect(await statistics.analyzeIfDue()).toBe(true);

      await insert('Practitioner', 400);
      expect(await statistics.analyzeIfDue()).toBe(false);
      await insert('Practitioner', 200);
      expect(await believedPractitioners()).toBeLessThan(10);
      expect(await statistics.analyzeIfDue()).toBe(true);
      expect(await believedPractitioners()).toBeGreaterThan(300);

      await insert('Practitioner', 1_000);
      expect(await statistics.analyzeIfDue()).toBe(false);
    } finally {
      await statistics.close();
      await pglite.close();
    }
  }, 120_000);
});
