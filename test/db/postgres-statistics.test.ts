import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { PostgresStatistics } from '../../src/db/postgres-statistics.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { testEnv } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;

/**
 * The keeper on a database of its own, so that no other test's writes or ANALYZE change the counts
 * it reads.
 */
describe.skipIf(!serverUrl)('planner statistics on PostgreSQL', () => {
  let own: OwnDatabase;
  let db: Database;
  let keeper: PostgresStatistics;

  beforeAll(async () => {
    own = await createOwnDatabase('flint_statistics');
    db = await Database.open(loadConfig(testEnv({ DATABASE_URL: own.url })));
    await migrate(db);
    keeper = new PostgresStatistics(db, 0, () => undefined);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
    await own?.drop();
  });

  async function insertPatients(count: number): Promise<void> {
    await insertResources('Patient', count);
  }

  async function insertResources(type: string, count: number): Promise<void> {
    await db.execute(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       SELECT $2::text, gen_random_uuid()::text, 'p', gen_random_uuid(), now(), false, json_build_object('resourceType', $2::text)
       FROM generate_series(1, $1::int)`,
      [count, type],
    );
  }

  /** The changes PostgreSQL counted on `resource` since its last ANALYZE, once its statistics show at least `atLeast`. */
  async function changesCounted(atLeast: number): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const [row] = await db.query<{ n: number }>(`SELECT n_mod_since_analyze::int AS n FROM pg_stat_user_tables WHERE relname = 'resource'`);
      if ((row?.n ?? 0) >= atLeast) return row.n;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`PostgreSQL never counted ${atLeast} changes on resource`);
  }

  it('analyzes a search table once its changes pass 50 + 10% of its rows, then leaves it until they do again', async () => {
    await insertPatients(200);
    await changesCounted(200);
    expect(await keeper.analyzeDue()).toEqual(['resource']);

    await insertPatients(40);
    await changesCounted(40);
    expect(await keeper.analyzeDue()).toEqual([]);
  });

  it('skips its round while another server holds it', async () => {
    await insertPatients(500);
    await changesCounted(500);
    const other = new PostgresStatistics(db, 0, () => undefined);
    const [mine, theirs] = await Promise.all([keeper.analyzeDue(), other.analyzeDue()]);
    expect([mine, theirs].filter((tables) => tables.length > 0)).toEqual([['resource']]);
  });

  it('analyzes a table in which a type its statistics did not see reaches 500 rows, far below 10% of the table, then waits for it to grow fourfold', async () => {
    // 10% of the table is then over 3,000 rows: the first rule stays silent below.
    await insertPatients(30_000);
    await changesCounted(30_000);
    expect(await keeper.analyzeDue()).toEqual(['resource']);

    await insertResources('Practitioner', 400);
    await changesCounted(400);
    expect(await keeper.analyzeDue()).toEqual([]);
    await insertResources('Practitioner', 200);
    await changesCounted(600);
    expect(await keeper.analyzeDue()).toEqual(['resource']);

    await insertResources('Practitioner', 1_000);
    await changesCounted(1_000);
    expect(await keeper.analyzeDue()).toEqual([]);
    await insertResources('Practitioner', 1_000);
    await changesCounted(2_000);
    expect(await keeper.analyzeDue()).toEqual(['resource']);
  });
});
