import { rmSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_URL } from '../../src/admin/async-job.js';
import { loadConfig } from '../../src/config.js';
import { registerOperation } from '../../src/operations/registry.js';
import { systemTestOperation } from '../helpers/operations.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { newDataDir, superAdminClient, testEnv, useTestServer, type ProjectClient, type TestResponse } from '../helpers/server.js';

/**
 * AsyncJobs whose server stopped mid-job. A job of the queue holds a lease its server renews (a
 * heartbeat) and is resumed by another server when its server stops (test/operations/durable-jobs
 * covers resuming). An AsyncJob no queued job stands for (written by a server from before the
 * queue) that is accepted or active once its lease has passed is made `error` by any server, at
 * start and periodically, with an OperationOutcome saying its server stopped. A live job, on this
 * server or another one sharing the database, is never failed.
 */

/** Short enough for tests: a lease of 2 s, renewed every 0.5 s, swept every second. */
const STALE_MS = 2000;
const api = await useTestServer({ ASYNC_JOB_STALE_MS: String(STALE_MS) });

type Json = any;

const ASYNC = { Prefer: 'respond-async' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const out = (job: Json, name: string) => job.output?.parameter?.filter((p: Json) => p.name === name) ?? [];
const leaseOf = (job: Json): string | undefined => job.extension?.find((e: Json) => e.url === LEASE_URL)?.valueInstant;

// A test-only operation that runs until the test releases it (by label), reporting no progress:
// only the heartbeat keeps its job's lease.
const gates = new Map<string, () => void>();
/** How many times the handler started, by label. */
const starts = new Map<string, number>();
const waitingDefinition = systemTestOperation('test-waiting-job', [
  { name: 'label', use: 'in', min: 1, max: '1', type: 'string' },
  { name: 'done', use: 'out', min: 1, max: '1', type: 'boolean' },
]);
afterAll(
  registerOperation({
    definition: waitingDefinition,
    respondsAsync: true,
    async handler(input) {
      const { label } = input as { label: string };
      starts.set(label, (starts.get(label) ?? 0) + 1);
      await new Promise<void>((resolve) => gates.set(label, resolve));
      return { done: true };
    },
  }),
);
afterAll(() => {
  for (const release of gates.values()) release();
});

/** Starts the waiting operation on `client`'s server; returns the AsyncJob path. */
async function startWaitingJob(client: ProjectClient, label: string): Promise<string> {
  const res = await client.post('/$test-waiting-job', { resourceType: 'Parameters', parameter: [{ name: 'label', valueString: label }] }, ASYNC);
  expect(res.status, res.text).toBe(202);
  const location = res.headers.get('content-location')!;
  return location.slice(location.indexOf('/AsyncJob/'));
}

async function release(label: string): Promise<void> {
  while (!gates.has(label)) await sleep(10);
  gates.get(label)!();
  gates.delete(label);
}

/** Polls the job until `done` holds; fails after 20 s. */
async function pollJob(client: ProjectClient, path: string, done: (job: Json) => boolean): Promise<Json> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res: TestResponse<Json> = await client.get(path);
    expect(res.status, res.text).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`AsyncJob still ${res.body.status}: ${res.text}`);
    await sleep(50);
  }
}

/** An AsyncJob written in `client`'s project as a server writes them, as if its server then stopped. */
async function writeJob(server: RunningServer, client: ProjectClient, fields: Json): Promise<string> {
  await client.token();
  const written = await server.services.auth.repo(client.projectId).createResource('AsyncJob', {
    resourceType: 'AsyncJob',
    status: 'active',
    requestTime: new Date(Date.now() - 60_000).toISOString(),
    request: 'http://localhost/fhir/R4/$reindex',
    ...fields,
  });
  return `/AsyncJob/${written.resource.id}`;
}

/** When the lease of the queued job behind `path` ends (ms). */
async function leaseUntil(path: string): Promise<number> {
  const [row] = await api.server.services.db.query<{ until: string }>('SELECT "leaseUntil"::text AS until FROM job WHERE id = $1', [path.split('/').pop()]);
  return Date.parse(row.until);
}

const aMinuteAgo = () => new Date(Date.now() - 60_000).toISOString();

describe('AsyncJobs whose server stopped', () => {
  it('a job whose lease has passed becomes error, and GET shows why', async () => {
    const p = api.newProject();
    const path = await writeJob(api.server, p, { extension: [{ url: LEASE_URL, valueInstant: aMinuteAgo() }] });
    const job = await pollJob(p, path, (j) => j.status !== 'active');
    expect(job.status).toBe('error');
    expect(Date.parse(job.transactionTime)).toBeGreaterThan(Date.now() - 60_000);
    const [issue] = out(job, 'outcome')[0].resource.issue;
    expect(issue.severity).toBe('error');
    expect(issue.code).toBe('transient');
    expect(issue.details.text).toContain('stopped before it finished');
    expect(leaseOf(job)).toBeUndefined();
  });

  it('a failed job keeps the progress it had reported, before the outcome', async () => {
    const p = api.newProject();
    const path = await writeJob(api.server, p, {
      extension: [{ url: LEASE_URL, valueInstant: aMinuteAgo() }],
      output: { resourceType: 'Parameters', parameter: [{ name: 'resources', valueInteger: 500 }] },
    });
    const job = await pollJob(p, path, (j) => j.status !== 'active');
    expect(job.status).toBe('error');
    expect(job.output.parameter.map((entry: Json) => entry.name)).toEqual(['resources', 'outcome']);
    expect(out(job, 'resources')[0].valueInteger).toBe(500);
  });

  it('an accepted job that never started is failed too', async () => {
    const p = api.newProject();
    const path = await writeJob(api.server, p, { status: 'accepted', extension: [{ url: LEASE_URL, valueInstant: aMinuteAgo() }] });
    const job = await pollJob(p, path, (j) => j.status !== 'accepted');
    expect(job.status).toBe('error');
  });

  it('a job without a lease (written before leases) is failed once not written for ASYNC_JOB_STALE_MS', async () => {
    const p = api.newProject();
    const path = await writeJob(api.server, p, {});
    const written = Date.now();
    const job = await pollJob(p, path, (j) => j.status !== 'active');
    expect(job.status).toBe('error');
    expect(Date.now() - written).toBeGreaterThanOrEqual(STALE_MS - 100);
  });

  it('the lease decides, not the age: a job whose lease has not passed is left active', async () => {
    const p = api.newProject();
    const leased = await writeJob(api.server, p, { extension: [{ url: LEASE_URL, valueInstant: new Date(Date.now() + 3_600_000).toISOString() }] });
    const expired = await writeJob(api.server, p, { extension: [{ url: LEASE_URL, valueInstant: aMinuteAgo() }] });
    // Once a sweep has failed the expired one, and a lease's time later.
    await pollJob(p, expired, (j) => j.status === 'error');
    await sleep(STALE_MS);
    expect((await p.get(leased)).body.status).toBe('active');
  });

  it('a finished job is left as it is, even with a lease that has passed', async () => {
    const p = api.newProject();
    const finished = await writeJob(api.server, p, { status: 'completed', transactionTime: aMinuteAgo(), extension: [{ url: LEASE_URL, valueInstant: aMinuteAgo() }] });
    const before = (await p.get(finished)).body;
    const expired = await writeJob(api.server, p, { extension: [{ url: LEASE_URL, valueInstant: aMinuteAgo() }] });
    await pollJob(p, expired, (j) => j.status === 'error');
    const after = (await p.get(finished)).body;
    expect(after.status).toBe('completed');
    expect(after.meta.versionId).toBe(before.meta.versionId);
  });

  it('a running job is neither failed nor run twice: its server renews the lease while it runs', async () => {
    const label = `live-${Date.now()}`;
    const path = await startWaitingJob(api.superAdmin, label);
    await pollJob(api.superAdmin, path, (j) => j.status === 'active');
    const first = await leaseUntil(path);
    // Several leases long, without any progress report.
    await sleep(STALE_MS * 2.5);
    expect((await api.superAdmin.get(path)).body.status).toBe('active');
    expect(await leaseUntil(path)).toBeGreaterThan(first);
    expect(starts.get(label)).toBe(1);
    await release(label);
    const done = await pollJob(api.superAdmin, path, (j) => j.transactionTime !== undefined);
    expect(done.status).toBe('completed');
    expect(out(done, 'done')[0].valueBoolean).toBe(true);
  }, 30_000);

  it('a job whose server shut down is resumed by the next server, not failed', async () => {
    // One database for both servers: a data folder on PGlite (already migrated: a busy machine
    // spent most of the test's time migrating an empty one), the test database on PostgreSQL; and
    // one job queue, so the second takes up the first's jobs.
    const dataDir = await newDataDir();
    const queue = `restart_${Date.now()}`;
    const start = () => startServer(loadConfig(testEnv({ DATA_DIR: dataDir, ASYNC_JOB_STALE_MS: '1000', JOB_QUEUE: queue })), { log: pino({ level: 'silent' }) });
    const label = `stopped-${Date.now()}`;
    let second: RunningServer | undefined;
    try {
      const first = await start();
      const path = await startWaitingJob(superAdminClient(first.url), label);
      await pollJob(superAdminClient(first.url), path, (j) => j.status === 'active');
      // Active is written before the handler starts: a server closing in between hands back a job
      // it never ran, and the handler would start only once.
      while ((starts.get(label) ?? 0) < 1) await sleep(20);
      // The server stops while the job runs: it hands the job back to the queue.
      await first.close();
      second = await start();
      while ((starts.get(label) ?? 0) < 2) await sleep(20);
      await release(label);
      const job = await pollJob(superAdminClient(second.url), path, (j) => j.transactionTime !== undefined);
      expect(job.status).toBe('completed');
      expect(out(job, 'done')[0].valueBoolean).toBe(true);
    } finally {
      gates.get(label)?.();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it.skipIf(!process.env.DATABASE_URL)('a server starting (and sweeping) does not fail a job another live server runs', async () => {
    const label = `other-${Date.now()}`;
    const path = await startWaitingJob(api.superAdmin, label);
    await pollJob(api.superAdmin, path, (j) => j.status === 'active');
    await sleep(STALE_MS * 1.5);
    // A second server on the same database, sweeping every half second.
    const other = await startServer(loadConfig(testEnv({ ASYNC_JOB_STALE_MS: '1000' })), { log: pino({ level: 'silent' }) });
    try {
      expect((await superAdminClient(other.url).get(path)).body.status).toBe('active');
      await sleep(STALE_MS * 1.5);
      expect((await superAdminClient(other.url).get(path)).body.status).toBe('active');
    } finally {
      await other.close();
    }
    await release(label);
    expect((await pollJob(api.superAdmin, path, (j) => j.transactionTime !== undefined)).status).toBe('completed');
  }, 30_000);
});
