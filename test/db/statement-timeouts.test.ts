import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { patientBody, startTestServer, type TestServer } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;

/**
 * Statements that outrun their class's statement_timeout on PostgreSQL. The slow statement is a
 * real one waiting for a lock this test holds on its own connection, as a long transaction of
 * another client would: no timing decides the outcome. On a database of its own, so that the
 * table lock stops no other test's server.
 */
describe.skipIf(!serverUrl)('statement timeouts on PostgreSQL', () => {
  let own: OwnDatabase;
  /** Reads and searches bounded to 1 s. */
  let api: TestServer;
  /** Writes bounded to 1 s, reads to 10 minutes: a write's bound is its transaction's own. */
  let writes: TestServer;

  /** Runs `work` while this test holds `lock` (a statement run in an open transaction of its own). */
  async function whileLocked<T>(lock: string, args: unknown[], work: () => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: own.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(lock, args);
      return await work();
    } finally {
      await client.query('ROLLBACK');
      await client.end();
    }
  }

  beforeAll(async () => {
    own = await createOwnDatabase('flint_timeouts');
    api = await startTestServer({ DATABASE_URL: own.url, STATEMENT_TIMEOUT_MS: '1000' });
    writes = await startTestServer({ DATABASE_URL: own.url, STATEMENT_TIMEOUT_MS: '600000', WRITE_STATEMENT_TIMEOUT_MS: '1000' });
  }, 120_000);

  afterAll(async () => {
    await api?.server.close();
    await writes?.server.close();
    await own?.drop();
  });

  it('answers a search that outruns STATEMENT_TIMEOUT_MS with 503 timeout and Retry-After, serving other requests meanwhile', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const identifier = created.body.identifier[0].value as string;
    await whileLocked('LOCK TABLE token_index IN ACCESS EXCLUSIVE MODE', [], async () => {
      const search = await client.get(`/Patient?identifier=${identifier}`);
      expect(search.status).toBe(503);
      expect(search.headers.get('retry-after')).toBe('1');
      expect(search.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'timeout' }] });
      expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
    });
    const after = await client.get(`/Patient?identifier=${identifier}`);
    expect(after.status).toBe(200);
    expect(after.body.entry).toHaveLength(1);
  });

  it('answers a read by id that outruns STATEMENT_TIMEOUT_MS with 503 timeout and Retry-After', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    await whileLocked('LOCK TABLE resource IN ACCESS EXCLUSIVE MODE', [], async () => {
      const read = await client.get(`/Patient/${created.body.id}`);
      expect(read.status).toBe(503);
      expect(read.headers.get('retry-after')).toBe('1');
      expect(read.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'timeout' }] });
    });
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
  });

  it('answers a write that outruns WRITE_STATEMENT_TIMEOUT_MS with 503 timeout and leaves nothing of it', async () => {
    const client = writes.newProject();
    const created = await client.post('/Patient', patientBody());
    const id = created.body.id as string;
    await whileLocked('SELECT 1 FROM resource WHERE id = $1 FOR UPDATE', [id], async () => {
      const update = await client.put(`/Patient/${id}`, { ...created.body, gender: 'female' });
      expect(update.status).toBe(503);
      expect(update.headers.get('retry-after')).toBe('1');
      expect(update.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'timeout' }] });
    });
    const history = await client.get(`/Patient/${id}/_history`);
    expect(history.body.entry).toHaveLength(1);
    expect((await client.get(`/Patient/${id}`)).body).toMatchObject({ gender: 'male', meta: { versionId: created.body.meta.versionId } });
    expect((await client.put(`/Patient/${id}`, { ...created.body, gender: 'female' })).status).toBe(200);
  });

  it('answers _total=accurate whose count outruns STATEMENT_TIMEOUT_MS with the estimate, as above the threshold', async () => {
    const client = api.newProject();
    const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] } };
    for (let i = 0; i < 3; i++) expect((await client.post('/Observation', observation)).status).toBe(201);
    const query = '/Observation?code=http://loinc.org|8867-4&_summary=count';
    expect((await client.get(query)).body.total).toBe(3);
    // A write drops the kept count; the planner's estimate is kept a few seconds whatever is
    // written, so only the count reads the token rows this test locks.
    expect((await client.post('/Observation', observation)).status).toBe(201);
    await whileLocked('LOCK TABLE token_index IN ACCESS EXCLUSIVE MODE', [], async () => {
      const res = await client.get(query);
      expect(res.status, res.text).toBe(200);
      expect(res.body.meta.tag).toEqual([{ system: 'https://flint.dev/fhir/CodeSystem/search-total', code: 'estimate' }]);
      expect(typeof res.body.total).toBe('number');
    });
    expect((await client.get(query)).body.total).toBe(4);
  });
});
