import { randomUUID } from 'node:crypto';
import { createServer, connect, type Socket } from 'node:net';
import pg from 'pg';
import { ConfigError, loadConfig } from '../../src/config.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  clientCredentialsToken,
  eventually,
  lazyToken,
  patientBody,
  projectClient,
  startTestServer,
  useTestServer,
  type ProjectClient,
  type TestServer,
} from '../helpers/server.js';

/**
 * Reads on a real streaming replica (docs/replicas.md): scripts/replica-pair.sh starts a primary
 * and a `pg_basebackup -R` replica of it, and .ci/run exports their URLs. Pausing the replica's
 * replay makes its answers tell themselves apart from the primary's: a write made after the pause
 * is on the primary only.
 */
const primaryUrl = process.env.TEST_PRIMARY_URL;
const replicaUrl = process.env.TEST_REPLICA_URL;
/** A port nothing listens on: a replica that is down. */
const DOWN_REPLICA = 'postgres://postgres@127.0.0.1:1/postgres';

describe('DATABASE_READ_URL', () => {
  it('without DATABASE_URL is refused at start, naming both settings', () => {
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://replica/db' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://replica/db' })).toThrow(/DATABASE_READ_URL needs DATABASE_URL/);
  });
});

/** A TCP relay to `url`'s port, which the test can cut: a replica that goes away between two polls. */
async function relayTo(url: string): Promise<{ url: string; cut(): Promise<void> }> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const port = (relay.address() as { port: number }).port;
  return {
    url: `postgres://${target.username}@127.0.0.1:${port}${target.pathname}`,
    cut: () => new Promise<void>((resolve) => {
      relay.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    }),
  };
}

if (!primaryUrl || !replicaUrl) {
  describe('read replicas', () => {
    // In CI the pair must be there: a missing one is a failure, not a skipped suite.
    it.skipIf(!process.env.CI)('need TEST_PRIMARY_URL and TEST_REPLICA_URL (scripts/replica-pair.sh start)', () => {
      throw new Error('TEST_PRIMARY_URL and TEST_REPLICA_URL are not set: start scripts/replica-pair.sh (see .ci/run)');
    });
  });
} else {
  describe('read replicas', () => {
    const replica = new pg.Client({ connectionString: replicaUrl });
    let api: TestServer;

    beforeAll(async () => {
      await replica.connect();
      api = await useTestServer(replicaEnv(replicaUrl));
    });
    afterEach(() => replica.query('SELECT pg_wal_replay_resume()'));
    afterAll(() => replica.end());

    function replicaEnv(readUrls: string, extra: Record<string, string> = {}): Record<string, string> {
      return { DATABASE_URL: primaryUrl!, DATABASE_READ_URL: readUrls, DATABASE_READ_POLL_MS: '20', DATABASE_READ_MAX_LAG_MS: '60000', STATISTICS_INTERVAL_MS: '0', ...extra };
    }

    /** Replay stops once the replica has everything written so far, so what is written next is on the primary only. */
    async function pauseReplay(server: TestServer): Promise<void> {
      const [{ lsn }] = (await server.server.services.db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'));
      await eventually(async () => (await replica.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn])).rows[0].ok, true, 10_000);
      await replica.query('SELECT pg_wal_replay_pause()');
    }

    /**
     * The resource table locked on the replica only: a lock taken on the primary is replayed, then
     * replay pauses and the primary lets it go. Statements on the replica that read resources wait
     * until the replay resumes (afterEach).
     */
    async function lockedOnReplicaOnly(): Promise<void> {
      const locker = new pg.Client({ connectionString: primaryUrl });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE resource IN ACCESS EXCLUSIVE MODE');
        // The lock's WAL record is not flushed (nor sent) until something commits: on an idle
        // primary it can wait in a partial page. A commit on another connection flushes it.
        await flushWal();
        const held = "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'resource'::regclass AND mode = 'AccessExclusiveLock'";
        expect(await eventually(async () => (await replica.query(held)).rows[0].n, 1, 10_000)).toBe(1);
        await replica.query('SELECT pg_wal_replay_pause()');
      } finally {
        await locker.query('ROLLBACK').finally(() => locker.end());
      }
    }

    /** Everything written on the primary so far flushed to its WAL (so sent to the replica): a commit of its own. */
    async function flushWal(): Promise<void> {
      const committer = new pg.Client({ connectionString: primaryUrl });
      await committer.connect();
      try {
        await committer.query('SELECT txid_current()');
      } finally {
        await committer.end();
      }
    }

    /** Two Logins (two tokens) of one project's client. */
    async function twoLogins(server: TestServer): Promise<[ProjectClient, ProjectClient]> {
      const first = server.newProject();
      const { clientId, clientSecret } = await server.credentialsOf(first);
      const second = projectClient(server.fhir, first.projectId, lazyToken(() => clientCredentialsToken(server.url, clientId, clientSecret)));
      await Promise.all([first.token(), second.token()]);
      return [first, second];
    }

    /** A Patient written by one Login after the replica's replay paused, and another Login of the same client. */
    async function writtenOnPrimaryOnly(server: TestServer) {
      const [writer, other] = await twoLogins(server);
      await pauseReplay(server);
      const body = patientBody();
      const created = await writer.post('/Patient', body);
      expect(created.status).toBe(201);
      return { writer, other, id: created.body.id as string, identifier: `${body.identifier[0].system}|${body.identifier[0].value}`, body };
    }

    it('serves a read by id from the replica: another Login does not see a write the replica has not replayed', async () => {
      const { other, id } = await writtenOnPrimaryOnly(api);
      expect((await other.get(`/Patient/${id}`)).status).toBe(404);
    });

    it('serves a search from the replica: another Login finds nothing the replica has not replayed', async () => {
      const [writer, other] = await twoLogins(api);
      await pauseReplay(api);
      const family = `Replica${randomUUID().slice(0, 8)}`;
      expect((await writer.post('/Patient', patientBody({ name: [{ family }] }))).status).toBe(201);
      const found = await other.get(`/Patient?family=${family}`);
      expect(found.status).toBe(200);
      expect(found.body.entry ?? []).toHaveLength(0);
    });

    it('lets a Login read its own write while the replica has not replayed it (the primary answers)', async () => {
      const [writer] = await twoLogins(api);
      await pauseReplay(api);
      const family = `Own${randomUUID().slice(0, 8)}`;
      const created = await writer.post('/Patient', patientBody({ name: [{ family }] }));
      const read = await writer.get(`/Patient/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body.meta.versionId).toBe(created.body.meta.versionId);
      expect((await writer.get(`/Patient?family=${family}`)).body.entry).toHaveLength(1);
    });

    it('serves the other Login once the replica has replayed the write', async () => {
      const { other, id } = await writtenOnPrimaryOnly(api);
      expect((await other.get(`/Patient/${id}`)).status).toBe(404);
      await replica.query('SELECT pg_wal_replay_resume()');
      expect(await eventually(async () => (await other.get(`/Patient/${id}`)).status, 200, 10_000)).toBe(200);
    });

    it('runs a conditional create on the primary: it finds a match the replica has not replayed', async () => {
      const { other, id, identifier, body } = await writtenOnPrimaryOnly(api);
      const again = await other.post('/Patient', body, { 'If-None-Exist': `identifier=${identifier}` });
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(id);
    });

    it('runs a transaction Bundle on the primary: its conditional create finds a match the replica has not replayed', async () => {
      const { other, id, identifier, body } = await writtenOnPrimaryOnly(api);
      const bundle = {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [{ resource: body, request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${identifier}` } }],
      };
      const answer = await other.post('', bundle);
      expect(answer.status).toBe(200);
      expect(answer.body.entry[0].response.status).toMatch(/^200/);
      expect(answer.body.entry[0].response.location).toContain(`Patient/${id}/_history/`);
    });

    it('serves history from the replica, and a Login its own history from the primary', async () => {
      const { writer, other, id } = await writtenOnPrimaryOnly(api);
      expect((await other.get(`/Patient/${id}/_history`)).status).toBe(404);
      const own = await writer.get(`/Patient/${id}/_history`);
      expect(own.status).toBe(200);
      expect(own.body.entry).toHaveLength(1);
    });

    it('serves GraphQL queries from the replica', async () => {
      const { writer, other, id } = await writtenOnPrimaryOnly(api);
      const query = { query: `{ Patient(id: "${id}") { id } }` };
      const asOther = await fetch(`${api.url}/graphql`, { method: 'POST', headers: { ...(await other.authHeaders()), 'Content-Type': 'application/json' }, body: JSON.stringify(query) });
      const asWriter = await fetch(`${api.url}/graphql`, { method: 'POST', headers: { ...(await writer.authHeaders()), 'Content-Type': 'application/json' }, body: JSON.stringify(query) });
      expect(((await asOther.json()) as { data?: { Patient: unknown } }).data?.Patient ?? null).toBeNull();
      expect(((await asWriter.json()) as { data: { Patient: { id: string } } }).data.Patient.id).toBe(id);
    });

    it('reads from the primary when the replica lags beyond DATABASE_READ_MAX_LAG_MS', async () => {
      const lagging = await useTestServer(replicaEnv(replicaUrl, { DATABASE_READ_MAX_LAG_MS: '200' }));
      const { other, id } = await writtenOnPrimaryOnly(lagging);
      expect(await eventually(async () => (await other.get(`/Patient/${id}`)).status, 200, 10_000)).toBe(200);
    });

    it('answers reads from the primary when the only replica is down', async () => {
      const down = await useTestServer(replicaEnv(DOWN_REPLICA));
      const [writer, other] = await twoLogins(down);
      const created = await writer.post('/Patient', patientBody());
      expect((await other.get(`/Patient/${created.body.id}`)).status).toBe(200);
      expect((await other.get(`/Patient?_id=${created.body.id}`)).body.entry).toHaveLength(1);
    });

    it('runs a read on the primary when the replica goes away between two polls', async () => {
      const relay = await relayTo(replicaUrl);
      const server = await useTestServer(replicaEnv(relay.url, { DATABASE_READ_POLL_MS: '600000' }));
      const [writer, other] = await twoLogins(server);
      await pauseReplay(server);
      // Its one poll after start may have found the replica behind: this one finds it caught up.
      await server.server.services.readRouting!.replicas.poll();
      const created = await writer.post('/Patient', patientBody());
      expect((await other.get(`/Patient/${created.body.id}`)).status).toBe(404);
      await relay.cut();
      expect((await other.get(`/Patient/${created.body.id}`)).status).toBe(200);
    });

    it('skips a replica from the moment a read by id could not reach it, before the next poll', async () => {
      const relay = await relayTo(replicaUrl);
      const server = await useTestServer(replicaEnv(relay.url, { DATABASE_READ_POLL_MS: '600000' }));
      const [writer, other] = await twoLogins(server);
      const created = await writer.post('/Patient', patientBody());
      await server.server.services.readRouting!.replicas.poll();
      await relay.cut();
      expect((await other.get(`/Patient/${created.body.id}`)).status).toBe(200);
      expect(server.server.services.readRouting!.replicas.replicas.map((replica) => replica.reachable)).toEqual([false]);
    });

    it('answers a statement timeout on the replica as the client\'s 503, without running the statement again on the primary', async () => {
      const server = await useTestServer(replicaEnv(replicaUrl, { STATEMENT_TIMEOUT_MS: '300' }));
      const [writer, other] = await twoLogins(server);
      const created = await writer.post('/Patient', patientBody());
      await server.server.services.readRouting!.replicas.poll();
      await lockedOnReplicaOnly();
      const found = await other.get(`/Patient?_id=${created.body.id}`);
      expect(found.status).toBe(503);
      expect(found.headers.get('retry-after')).toBe('1');
      expect(found.body.issue[0].code).toBe('timeout');
    });

    it('skips a replica that is down among several', async () => {
      const mixed = await useTestServer(replicaEnv(`${DOWN_REPLICA},${replicaUrl}`));
      const [writer, other] = await twoLogins(mixed);
      const created = await writer.post('/Patient', patientBody());
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await eventually(async () => (await other.get(`/Patient/${created.body.id}`)).status, 200, 10_000)));
      expect(statuses).toEqual([200, 200, 200, 200]);
    });

    it('tells a Login\'s write to the other servers: it reads its own write on another server', async () => {
      const namespace = `test_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const env = replicaEnv(replicaUrl, { CACHE_NAMESPACE: namespace, ...(process.env.TEST_REDIS_URL && { REDIS_URL: process.env.TEST_REDIS_URL }) });
      const [first, second] = [await startTestServer(env), await startTestServer(env)];
      try {
        const writer = first.newProject();
        const { clientId, clientSecret } = await first.credentialsOf(writer);
        const token = await writer.token();
        const onSecond = projectClient(second.fhir, writer.projectId, async () => token);
        const other = projectClient(second.fhir, writer.projectId, lazyToken(() => clientCredentialsToken(second.url, clientId, clientSecret)));
        await other.token();
        await pauseReplay(first);
        const created = await writer.post('/Patient', patientBody());
        expect(await eventually(async () => (await onSecond.get(`/Patient/${created.body.id}`)).status, 200, 5_000)).toBe(200);
        expect((await other.get(`/Patient/${created.body.id}`)).status).toBe(404);
      } finally {
        await Promise.all([first.server.close(), second.server.close()]);
      }
    });
  });
}
