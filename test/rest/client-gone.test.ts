import { sentRequest } from '../helpers/raw-socket.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { patientBody, startTestServer, type ProjectClient, type TestServer } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;
const METRICS_TOKEN = 'client-gone-metrics';

/**
 * A request in work whose client closes its connection (docs/overload.md "Abandoned"). Its
 * statement is made long by a lock this test holds, as another client's long transaction would;
 * pg_stat_activity shows when it waits and when it has ended: bounded waits, no timing decides.
 * On a database of its own, so that the lock stops no other test's server.
 */
describe.skipIf(!serverUrl)('requests whose client goes away while they are in work (PostgreSQL)', () => {
  let own: OwnDatabase;
  let api: TestServer;
  let monitor: pg.Client;

  beforeAll(async () => {
    own = await createOwnDatabase('flint_client_gone');
    // No statement timeout worth the name: only the client's going away can end the search.
    api = await startTestServer({ DATABASE_URL: own.url, STATEMENT_TIMEOUT_MS: '600000', WRITE_STATEMENT_TIMEOUT_MS: '600000', METRICS_TOKEN });
    monitor = new pg.Client({ connectionString: own.url });
    await monitor.connect();
  }, 120_000);

  afterAll(async () => {
    await monitor?.end();
    await api?.server.close();
    await own?.drop();
  });

  /** Holds `lock` in an open transaction of its own until `release()`. */
  async function holdLock(lock: string): Promise<{ release(): Promise<void> }> {
    const holder = new pg.Client({ connectionString: own.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(lock);
    return {
      async release() {
        await holder.query('ROLLBACK');
        await holder.end();
      },
    };
  }

  /** Statements of the server waiting for a lock now. */
  async function waiting(): Promise<number> {
    const { rows } = await monitor.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
    );
    return rows[0].n;
  }

  async function untilWaiting(expected: number): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      if ((await waiting()) === expected) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`statements waiting for a lock: never ${expected} (now ${await waiting()})`);
  }

  async function untilIdle(): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      const body = (await (await api.raw('/healthcheck')).json()) as { admission: { inWork: number; queued: number } };
      if (body.admission.inWork === 0 && body.admission.queued === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the server never became idle');
  }

  /** How many requests of `route` the server's metrics counted with `status`. */
  async function answered(method: string, route: string, status: number): Promise<number> {
    const text = await (await api.raw('/metrics', { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const series = `flint_http_request_duration_seconds_count{method="${method}",route="${route}",status="${status}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line ? Number(line.slice(series.length)) : 0;
  }

  /** Waits until the metrics count one more request of `route` with `status` than `before`. */
  async function untilAnswered(method: string, route: string, status: number, before: number): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      if ((await answered(method, route, status)) > before) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no ${method} ${route} answered ${status}`);
  }

  async function headers(client: ProjectClient): Promise<string> {
    return `Host: x\r\nAuthorization: Bearer ${await client.token()}\r\n`;
  }

  it('cancels the statement of a search whose client closed its connection, and serves the next request', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const identifier = created.body.identifier[0].value as string;
    const lock = await holdLock('LOCK TABLE token_index IN ACCESS EXCLUSIVE MODE');
    try {
      const leaving = await sentRequest(api, `GET /fhir/R4/Patient?identifier=${identifier} HTTP/1.1\r\n${await headers(client)}\r\n`);
      await untilWaiting(1);
      leaving.destroy();
      await untilWaiting(0);
      await untilIdle();
      expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
    } finally {
      await lock.release();
    }
    const after = await client.get(`/Patient?identifier=${identifier}`);
    expect(after.status).toBe(200);
    expect(after.body.entry).toHaveLength(1);
  });

  it('cancels the statement of a GraphQL search whose client closed its connection', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const identifier = created.body.identifier[0].value as string;
    const body = JSON.stringify({ query: `{ PatientList(identifier: "${identifier}") { id } }` });
    const lock = await holdLock('LOCK TABLE token_index IN ACCESS EXCLUSIVE MODE');
    try {
      const leaving = await sentRequest(
        api,
        `POST /fhir/R4/$graphql HTTP/1.1\r\n${await headers(client)}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await untilWaiting(1);
      leaving.destroy();
      await untilWaiting(0);
      await untilIdle();
    } finally {
      await lock.release();
    }
  });

  it('records a GraphQL read whose client closed its connection as 499, not 200', async () => {
    const client = api.newProject();
    const body = JSON.stringify({ query: '{ PatientList(identifier: "nobody-has-it") { id } }' });
    const route = '/fhir/R4/$graphql';
    const sent = await headers(client);
    const before = { closed: await answered('POST', route, 499), ok: await answered('POST', route, 200) };
    const lock = await holdLock('LOCK TABLE token_index IN ACCESS EXCLUSIVE MODE');
    try {
      const leaving = await sentRequest(
        api,
        `POST ${route} HTTP/1.1\r\n${sent}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await untilWaiting(1);
      leaving.destroy();
      await untilAnswered('POST', route, 499, before.closed);
    } finally {
      await lock.release();
    }
    expect(await answered('POST', route, 200)).toBe(before.ok);
  });

  it('makes a create whose client closed its connection whole (its statements are not cancelled)', async () => {
    const client = api.newProject();
    const patient = patientBody();
    const body = JSON.stringify(patient);
    const identifier = (patient.identifier as { value: string }[])[0].value;
    const sent = await headers(client);
    const lock = await holdLock('LOCK TABLE token_index IN ACCESS EXCLUSIVE MODE');
    try {
      const leaving = await sentRequest(
        api,
        `POST /fhir/R4/Patient HTTP/1.1\r\n${sent}Content-Type: application/fhir+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await untilWaiting(1);
      leaving.destroy();
    } finally {
      await lock.release();
    }
    await untilIdle();
    const found = await client.get(`/Patient?identifier=${identifier}`);
    expect(found.body.entry).toHaveLength(1);
    const id = (found.body.entry as { resource: { id: string } }[])[0].resource.id;
    const read = await client.get(`/Patient/${id}`);
    expect(read.body).toMatchObject({ name: patient.name, identifier: patient.identifier });
  });
});
