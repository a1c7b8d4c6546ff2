import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database, type TransactionalSql } from '../../src/db/database.js';
import { WAIT_SLOTS } from '../../src/db/worker-protocol.js';
import { patientBody, startTestServer, testEnv, type TestServer } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;

/** Holds `db`'s connection in an open transaction until `release()`. */
async function holdConnection(db: TransactionalSql): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  // A migration's kind: its wait to start is unbounded, as the statistics keeper may hold the connection a moment.
  const transaction = db.transaction(async (tx) => {
    await tx.query('SELECT 1 AS one');
    holding();
    await released;
  }, 'schema');
  await held;
  return {
    async release() {
      release();
      await transaction;
    },
  };
}

/**
 * Statements waiting for the embedded database's one connection (PostgreSQL cancels its own:
 * client-gone.test.ts, statement-timeouts.test.ts). The connection is held by a transaction this
 * test keeps open; the waiting statement takes a value of a sequence, which shows whether it ran.
 */
describe.skipIf(serverUrl)('statements waiting for the embedded database (PGlite)', () => {
  /** Statements unbounded: only their client's going away drops them. */
  let db: Database;
  /** Statements outside transactions, and the wait of a write's transaction for the connection, bounded to 200 ms. */
  let bounded: Database;

  beforeAll(async () => {
    db = await Database.open(loadConfig(testEnv({ STATEMENT_TIMEOUT_MS: '0' })));
    bounded = await Database.open(loadConfig(testEnv({ STATEMENT_TIMEOUT_MS: '200', WRITE_STATEMENT_TIMEOUT_MS: '200' })));
  });

  afterAll(() => Promise.all([db?.close(), bounded?.close()]));

  /** A sequence of its own (never taken from yet) and the statement that takes from it. */
  async function newSequence(db: Database): Promise<{ take: string; taken: () => Promise<boolean> }> {
    const name = `waiting_${randomUUID().replaceAll('-', '')}`;
    // Unbounded (a migration's kind), so that only the statement under test can be dropped.
    await db.transaction((tx) => tx.execute(`CREATE SEQUENCE ${name}`), 'schema');
    return {
      take: `SELECT nextval('${name}')::int AS n`,
      taken: async () => (await db.transaction((tx) => tx.query<{ is_called: boolean }>(`SELECT is_called FROM ${name}`), 'schema'))[0].is_called,
    };
  }

  /** `promise`'s outcome, or 'still waiting' when it has none within 5 s (the statement was not dropped). */
  function outcomeOf(promise: Promise<unknown>): Promise<unknown> {
    const waited = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5000));
    return Promise.race([promise.then(() => 'ran', (error: unknown) => error), waited]);
  }

  /** Runs `send` with the statement that takes from a new sequence while the connection is held: answered 503 timeout, never run. */
  async function expectDroppedPastBound(send: (take: string) => Promise<unknown>): Promise<void> {
    const sequence = await newSequence(bounded);
    const holder = await holdConnection(bounded);
    try {
      const outcome = await outcomeOf(send(sequence.take));
      expect(outcome).toMatchObject({ status: 503, headers: { 'Retry-After': '1' }, outcome: { issue: [{ severity: 'error', code: 'timeout' }] } });
    } finally {
      await holder.release();
    }
    expect(await sequence.taken()).toBe(false);
  }

  it('drops a waiting statement whose client goes away, answers 499 at once, and never runs it', async () => {
    const sequence = await newSequence(db);
    const holder = await holdConnection(db);
    try {
      const gone = new AbortController();
      const waiting = db.query(sequence.take, [], { signal: gone.signal });
      gone.abort();
      expect(await outcomeOf(waiting)).toMatchObject({ status: 499 });
    } finally {
      await holder.release();
    }
    expect(await sequence.taken()).toBe(false);
  });

  it('drops a statement that waited past STATEMENT_TIMEOUT_MS, answers 503 timeout, and never runs it', async () => {
    await expectDroppedPastBound((take) => bounded.query(take));
  });

  it('drops a write transaction that waited past WRITE_STATEMENT_TIMEOUT_MS to start, answers 503 timeout, and never runs it', async () => {
    await expectDroppedPastBound((take) => bounded.transaction((tx) => tx.query(take)));
  });

  it('answers a bounded statement 503 timeout at once when WAIT_SLOTS statements already wait, and never runs it', async () => {
    const patient = await Database.open(loadConfig(testEnv({ STATEMENT_TIMEOUT_MS: '60000' })));
    try {
      const sequence = await newSequence(patient);
      const holder = await holdConnection(patient);
      const queued = Array.from({ length: WAIT_SLOTS }, () => patient.query('SELECT 1 AS one'));
      try {
        const outcome = await outcomeOf(patient.query(sequence.take));
        expect(outcome).toMatchObject({ status: 503, headers: { 'Retry-After': '60' }, outcome: { issue: [{ code: 'timeout' }] } });
      } finally {
        await holder.release();
      }
      expect((await Promise.all(queued)).every((rows) => rows.length === 1)).toBe(true);
      expect(await sequence.taken()).toBe(false);
    } finally {
      await patient.close();
    }
  });

  it('runs a waiting transaction to its end once it has the connection, however long it waited', async () => {
    const sequence = await newSequence(db);
    const holder = await holdConnection(db);
    const waiting = db.transaction(async (tx) => {
      const [taken] = await tx.query<{ n: number }>(sequence.take);
      return taken.n;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await holder.release();
    expect(await waiting).toBe(1);
  });

  it('runs a waiting statement whose client stays once the connection is free', async () => {
    const sequence = await newSequence(db);
    const holder = await holdConnection(db);
    const waiting = db.query<{ n: number }>(sequence.take, [], { signal: new AbortController().signal });
    await holder.release();
    expect(await waiting).toEqual([{ n: 1 }]);
  });
});

/** What a client of a server on the embedded database sees when its search waits past its bound. */
describe.skipIf(serverUrl)('a search waiting for the embedded database past STATEMENT_TIMEOUT_MS', () => {
  let api: TestServer;

  beforeAll(async () => {
    api = await startTestServer({ STATEMENT_TIMEOUT_MS: '300' });
  });

  afterAll(() => api?.server.close());

  it('answers 503 timeout with Retry-After while the connection is still held, and the search after with its match', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const identifier = created.body.identifier[0].value as string;
    const holder = await holdConnection(api.server.services.db);
    try {
      const search = await fetch(`${api.fhir}/Patient?identifier=${identifier}`, {
        headers: await client.authHeaders(),
        signal: AbortSignal.timeout(10_000),
      });
      await expectTimedOut(search);
    } finally {
      await holder.release();
    }
    const after = await client.get(`/Patient?identifier=${identifier}`);
    expect(after.status).toBe(200);
    expect(after.body.entry).toHaveLength(1);
  });
});

/** What a client of a server on the embedded database sees when its write waits past its bound to start. */
describe.skipIf(serverUrl)('a write waiting for the embedded database past WRITE_STATEMENT_TIMEOUT_MS', () => {
  let api: TestServer;

  beforeAll(async () => {
    // Reads bounded far beyond the write's bound: what answers is the transaction's wait to start.
    api = await startTestServer({ WRITE_STATEMENT_TIMEOUT_MS: '300', STATEMENT_TIMEOUT_MS: '60000' });
  });

  afterAll(() => api?.server.close());

  it('answers an update 503 timeout with Retry-After while the connection is still held, and writes nothing', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    expect(created.status).toBe(201);
    const holder = await holdConnection(api.server.services.db);
    try {
      const updated = await fetch(`${api.fhir}/Patient/${created.body.id}`, {
        method: 'PUT',
        headers: { ...(await client.authHeaders()), 'Content-Type': 'application/fhir+json' },
        body: JSON.stringify({ ...created.body, gender: 'other' }),
        signal: AbortSignal.timeout(10_000),
      });
      await expectTimedOut(updated);
    } finally {
      await holder.release();
    }
    const after = await client.get(`/Patient/${created.body.id}`);
    expect(after.status).toBe(200);
    expect(after.body.meta.versionId).toBe(created.body.meta.versionId);
  });
});

/** The answer to a request whose statement waited past its bound: 503 `timeout`, to be retried in a second. */
async function expectTimedOut(answer: Response): Promise<void> {
  expect(answer.status).toBe(503);
  expect(answer.headers.get('retry-after')).toBe('1');
  expect(await answer.json()).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'timeout' }] });
}
