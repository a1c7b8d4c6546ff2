import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database, type QueryOptions } from '../../src/db/database.js';
import { testEnv } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;

/** The database layer's side of a request whose client went away: the statement's signal. */
describe('statements sent with the signal of a client going away', () => {
  let db: Database;

  beforeAll(async () => {
    db = await Database.open(loadConfig(testEnv()));
  });

  afterAll(() => db?.close());

  it('sends no statement once the signal has aborted, and answers 499', async () => {
    const gone = new AbortController();
    gone.abort();
    const before = db.statementCount;
    await expect(db.query('SELECT 1 AS one', [], { signal: gone.signal })).rejects.toMatchObject({ status: 499 });
    expect(db.statementCount).toBe(before);
    expect(await db.query('SELECT 1 AS one', [], { signal: new AbortController().signal })).toEqual([{ one: 1 }]);
  });
});

/**
 * On PostgreSQL the statement in flight is cancelled. The monitor polls pg_stat_activity for it: a
 * bounded wait that ends at once with the cancel, and runs out (failing) where nothing cancels it.
 */
describe.skipIf(!serverUrl)('statements in flight when their client goes away (PostgreSQL)', () => {
  let db: Database;
  let monitor: pg.Client;

  beforeAll(async () => {
    db = await Database.open(loadConfig(testEnv({ DATABASE_POOL_SIZE: '2' })));
    monitor = new pg.Client({ connectionString: serverUrl });
    await monitor.connect();
  });

  afterAll(async () => {
    await monitor?.end();
    await db?.close();
  });

  /** Backends running `marker`'s statement now. */
  async function running(marker: string): Promise<number> {
    const { rows } = await monitor.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()",
      [`%${marker}%`],
    );
    return rows[0].n;
  }

  async function untilRunning(marker: string, expected: number): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      if ((await running(marker)) === expected) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`backends running ${marker}: never ${expected} (now ${await running(marker)})`);
  }

  for (const [path, options] of [
    ['the Prisma adapter', {}],
    ['pg itself (pgValues)', { pgValues: true }],
  ] as const) {
    it(`cancels a statement sent through ${path} and keeps its connection in the pool`, async () => {
      const marker = `client_gone_${path.length}_${Date.now()}`;
      // One connection in the pool before: the cancelled statement's must come back to it, sound.
      await db.query('SELECT 1 AS one');
      const gone = new AbortController();
      const sleeping = db.query(`SELECT pg_sleep(600) AS ${marker}`, [], { ...(options as QueryOptions), signal: gone.signal });
      sleeping.catch(() => undefined);
      await untilRunning(marker, 1);
      const connections = db.poolUse().reduce((sum, pool) => sum + pool.totalCount, 0);
      gone.abort();
      await expect(sleeping).rejects.toMatchObject({ status: 499 });
      await untilRunning(marker, 0);
      expect(await db.query('SELECT 2 AS two', [], options as QueryOptions)).toEqual([{ two: 2 }]);
      expect(db.poolUse().reduce((sum, pool) => sum + pool.totalCount, 0)).toBe(connections);
    });
  }
});
