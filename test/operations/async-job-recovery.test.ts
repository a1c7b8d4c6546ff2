import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_URL } from '../../src/admin/async-job.js';
import { loadConfig } from '../../src/config.js';
import type { OperationDefinition } from '../../src/operations/definition.js';
import { registerOperation } from '../../src/operations/registry.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { superAdminClient, testEnv, useTestServer, type ProjectClient, type TestResponse } from '../helpers/server.js';

/**
 * AsyncJobs whose server stopped mid-job: a running job holds a lease its server renews (a
 * heartbeat); any server, at start and periodically, turns an accepted or active job whose lease
 * has passed into `error`, with an OperationOutcome saying its server stopped. A live job, on this
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
const waitingDefinition: OperationDefinition = {
  resourceType: 'OperationDefinition',
  id: 'test-waiting-job',
  url: 'http://flint.test/OperationDefinition/test-waiting-job',
  status: 'active',
  kind: 'operation',
  code: 'test-waiting-job',
  system: true,
  type: false,
  instance: false,
  affectsState: true,
  parameter: [
    { name: 'label', use: 'in', min: 1, max: '1', type: 'string' },
    { name: 'done', use: 'out', min: 1, max: '1', type: 'boolean' },
  ],
};
afterAll(
  registerOperation({
    definition: waitingDefinition,
    respondsAsync: true,
    async handler(input) {
      const { label } = input as { label: string };
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

  it('a running job is not failed: its server renews the lease while it runs', async () => {
    const label = `live-${Date.now()}`;
    const path = await startWaitingJob(api.superAdmin, label);
    const active = await pollJob(api.superAdmin, path, (j) => j.status === 'active');
    expect(Date.parse(leaseOf(active)!)).toBeGreaterThan(Date.now());
    // Several leases long, without any progress report.
    await sleep(STALE_MS * 2.5);
    const later = (await api.superAdmin.get(path)).body;
    expect(later.status).toBe('active');
    expect(Date.parse(leaseOf(later)!)).toBeGreaterThan(Date.parse(leaseOf(active)!));
    await release(label);
    const done = await pollJob(api.superAdmin, path, (j) => j.transactionTime !== undefined);
    expect(done.status).toBe('completed');
    expect(out(done, 'done')[0].valueBoolean).toBe(true);
    expect(leaseOf(done)).toBeUndefined();
  }, 30_000);

  it('a server starting fails the job a stopped server was running', async () => {
    // One database for both servers: a data folder on PGlite, the test database on PostgreSQL.
    const dataDir = mkdtempSync(join(tmpdir(), 'flint-async-recovery-'));
    const start = (stale: number) =>
      startServer(loadConfig(testEnv({ DATA_DIR: dataDir, ASYNC_JOB_STALE_MS: String(stale) })), { log: pino({ level: 'silent' }) });
    const label = `stopped-${Date.now()}`;
    let second: RunningServer | undefined;
    try {
      const first = await start(1000);
      const path = await startWaitingJob(superAdminClient(first.url), label);
      await pollJob(superAdminClient(first.url), path, (j) => j.status === 'active');
      // The server stops while the job runs (its handler never gets to record anything).
      await first.close();
      await sleep(1500);
      // Another server, with the default setting: its start-up sweep finds the job's lease passed.
      second = await start(60_000);
      const job = (await superAdminClient(second.url).get(path)).body;
      expect(job.status).toBe('error');
      expect(out(job, 'outcome')[0].resource.issue[0].details.text).toContain('stopped before it finished');
    } finally {
      await release(label);
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
