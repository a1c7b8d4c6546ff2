import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { PostgresStatistics } from '../../src/db/postgres-statistics.js';
import { pgVacuumSession } from '../../src/db/postgres-vacuum.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { testEnv } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;

describe('STATISTICS_VACUUM', () => {
  it('is on unless set to off', () => {
    expect(loadConfig(testEnv()).statisticsVacuum).toBe(true);
    expect(loadConfig(testEnv({ STATISTICS_VACUUM: 'off' })).statisticsVacuum).toBe(false);
  });

  it('refuses anything but on or off, naming the setting', () => {
    expect(() => loadConfig(testEnv({ STATISTICS_VACUUM: 'yes' }))).toThrow(ConfigError);
    expect(() => loadConfig(testEnv({ STATISTICS_VACUUM: 'yes' }))).toThrow(/STATISTICS_VACUUM/);
  });
});

/**
 * The keeper's VACUUM on a database of its own (autovacuum is off on the test cluster, and no other
 * test's writes or VACUUM may change the visibility map it reads).
 */
describe.skipIf(!serverUrl)('VACUUM by the statistics keeper on PostgreSQL', { timeout: 60_000 }, () => {
  let own: OwnDatabase;
  let db: Database;

  beforeAll(async () => {
    own = await createOwnDatabase('flint_vacuum');
    db = await Database.open(loadConfig(testEnv({ DATABASE_URL: own.url })));
    await migrate(db);
    // Any autovacuum of the test cluster would mark pages behind the keeper's back.
    await db.execute(`ALTER TABLE resource SET (autovacuum_enabled = false)`);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
    await own?.drop();
  });

  /** `count` Patients of about 900 bytes each: eight to a page. */
  async function insertPatients(count: number): Promise<void> {
    await db.execute(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       SELECT 'Patient', gen_random_uuid()::text, 'p', gen_random_uuid(), now(), false,
         json_build_object('resourceType', 'Patient', 'text', repeat(md5(random()::text), 25))
       FROM generate_series(1, $1::int)`,
      [count],
    );
  }

  /** How many heap pages an index-only count of the Patients visits: what a count pays without the visibility map. */
  async function heapFetchesOfCount(): Promise<number> {
    const plan = await db.transaction(async (tx) => {
      await tx.execute('SET LOCAL enable_seqscan = off');
      await tx.execute('SET LOCAL enable_bitmapscan = off');
      return tx.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM resource WHERE "resourceType" = 'Patient' AND "projectId" = 'p'`,
      );
    });
    const line = plan.map((row) => row['QUERY PLAN']).find((text) => text.includes('Heap Fetches'));
    return Number(line?.match(/Heap Fetches: (\d+)/)?.[1] ?? Number.NaN);
  }

  /**
   * Until every page of the table is all-visible, as its last VACUUM meant to leave it: a page is
   * marked only once no snapshot could still miss its rows, which a loaded cluster can delay past
   * that VACUUM (it then marks fewer pages, and the next round would rightly find the table due).
   */
  async function settleVisibility(): Promise<void> {
    for (let attempt = 0; attempt < 100 && (await heapFetchesOfCount()) > 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await db.execute('VACUUM resource');
    }
    expect(await heapFetchesOfCount(), 'pages left not all-visible after 10 s of VACUUM').toBe(0);
  }

  it('vacuums a search table whose pages are mostly not all-visible, then leaves it until they are again', async () => {
    await insertPatients(2_000);
    expect(await heapFetchesOfCount()).toBeGreaterThan(0);
    const keeper = new PostgresStatistics(db, 0, () => undefined, pgVacuumSession(own.url));

    expect(await keeper.vacuumDue()).toBe('resource');
    expect(await heapFetchesOfCount()).toBe(0);
    expect(await keeper.vacuumDue()).toBeUndefined();

    await insertPatients(2_000);
    expect(await keeper.vacuumDue()).toBe('resource');
  });

  it('leaves a table alone while few of its pages changed since its last vacuum', async () => {
    await insertPatients(3_000);
    const keeper = new PostgresStatistics(db, 0, () => undefined, pgVacuumSession(own.url));
    expect(await keeper.vacuumDue()).toBe('resource');
    await settleVisibility();
    await insertPatients(100);
    expect(await keeper.vacuumDue()).toBeUndefined();
    expect(await heapFetchesOfCount()).toBeGreaterThan(0);
  });

  it('vacuums on one server at a time', async () => {
    await insertPatients(4_000);
    const one = new PostgresStatistics(db, 0, () => undefined, pgVacuumSession(own.url));
    const other = new PostgresStatistics(db, 0, () => undefined, pgVacuumSession(own.url));
    const vacuumed = await Promise.all([one.vacuumDue(), other.vacuumDue()]);
    expect(vacuumed.filter((table) => table !== undefined)).toEqual(['resource']);
  });

  it('never vacuums without a vacuum session (STATISTICS_VACUUM=off)', async () => {
    await insertPatients(4_000);
    const keeper = new PostgresStatistics(db, 20, () => undefined);
    keeper.start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await keeper.close();
    expect(await keeper.vacuumDue()).toBeUndefined();
    expect(await heapFetchesOfCount()).toBeGreaterThan(0);
  });

  it('vacuums in its rounds when started with a vacuum session', async () => {
    await insertPatients(4_000);
    const before = await vacuumsOfResource();
    const keeper = new PostgresStatistics(db, 20, () => undefined, pgVacuumSession(own.url));
    keeper.start();
    try {
      for (let attempt = 0; attempt < 600 && (await vacuumsOfResource()) === before; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await keeper.close();
    }
    expect(await vacuumsOfResource()).toBeGreaterThan(before);
  });

  /**
   * How many VACUUMs PostgreSQL counted on the resource table. Whether pages become all-visible also
   * depends on the oldest transaction anywhere the horizon counts, which the tests above check in
   * one step; a round is checked by what it ran.
   */
  async function vacuumsOfResource(): Promise<number> {
    const [row] = await db.query<{ n: number }>(`SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relname = 'resource'`);
    return row?.n ?? 0;
  }
});
