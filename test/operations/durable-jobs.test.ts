import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { enqueueJob } from '../../src/operations/jobs/queue.js';
import { jobQueued } from '../../src/operations/jobs/worker.js';
import { registerOperation } from '../../src/operations/registry.js';
import { systemTestOperation } from '../helpers/operations.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from '../search-api/helpers.js';

/**
 * Durable jobs (docs/jobs.md): a job whose server stopped (its lease passed) is resumed by another
 * server from its last checkpoint; transient database errors are retried with backoff, at most
 * JOB_MAX_ATTEMPTS runs; `$reindex` resumes after its last batch. Jobs "of a stopped server" are
 * written to the queue as that server left them.
 */

const api = await useTestServer({ ASYNC_JOB_STALE_MS: '2000', JOB_MAX_ATTEMPTS: '3', JOB_RETRY_BASE_MS: '10', JOB_POLL_MS: '100' });

type Json = any;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const out = (job: Json, name: string) => job.output?.parameter?.find((p: Json) => p.name === name);

/** A test-only operation reporting the checkpoint it resumed from, and failing transiently `failures` times. */
const attemptsByLabel = new Map<string, number>();
const stepDefinition = systemTestOperation('test-step-job', [
  { name: 'label', use: 'in', min: 1, max: '1', type: 'string' },
  { name: 'failures', use: 'in', min: 0, max: '1', type: 'integer' },
  { name: 'resumedFrom', use: 'out', min: 0, max: '1', type: 'integer' },
  { name: 'runs', use: 'out', min: 1, max: '1', type: 'integer' },
]);
afterAll(
  registerOperation({
    definition: stepDefinition,
    respondsAsync: true,
    async handler(input, { job }) {
      const { label, failures } = input as { label: string; failures?: number };
      const runs = (attemptsByLabel.get(label) ?? 0) + 1;
      attemptsByLabel.set(label, runs);
      if (runs <= (failures ?? 0)) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
      await job?.checkpoint({ step: runs });
      const resumed = (job?.resumeFrom as { step: number } | undefined)?.step;
      return { runs, ...(resumed === undefined ? {} : { resumedFrom: resumed }) };
    },
  }),
);

async function pollJob(client: ProjectClient, path: string): Promise<Json> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await client.get(path);
    expect(res.status, res.text).toBe(200);
    if (res.body.transactionTime !== undefined) return res.body;
    if (Date.now() > deadline) throw new Error(`AsyncJob still ${res.body.status}: ${res.text}`);
    await sleep(50);
  }
}

/**
 * A job as a server that then stopped left it: its AsyncJob active, its queue row running under
 * another owner's lease that has passed (or `leaseMs` ahead), with `checkpoint`, after `attempts` runs.
 */
async function abandonedJob(
  client: ProjectClient,
  operation: string,
  input: Json,
  checkpoint: Json,
  { leaseMs = -60_000, attempts = 1, identity = undefined as Json } = {},
): Promise<string> {
  await client.token();
  const projectId = client.projectId || (await superAdminProject());
  const written = await api.server.services.auth.repo(projectId).createResource('AsyncJob', {
    resourceType: 'AsyncJob',
    status: 'active',
    requestTime: new Date().toISOString(),
    request: `http://localhost/fhir/R4/$${operation}`,
  });
  const id = written.resource.id!;
  // In one transaction: the queued row is never seen (and claimed) before it looks abandoned.
  await api.server.services.db.transaction(async (db) => {
    const requestUrl = `http://localhost/fhir/R4/$${operation}`;
    await enqueueJob(db, api.server.services.config.jobs.queue, { id, projectId, operation, level: 'system', input, identity: identity ?? { projectId, superAdmin: true }, requestUrl });
    await db.execute(
      `UPDATE job SET status = 'running', attempts = $4, "leaseOwner" = 'a-stopped-server', "leaseUntil" = now() + $2::int * interval '1 millisecond', checkpoint = $3::json WHERE id = $1`,
      [id, leaseMs, JSON.stringify(checkpoint), attempts],
    );
  });
  jobQueued(api.server.services.db);
  return `/AsyncJob/${id}`;
}

/** The identity a project client's token carries, as a job saves it. */
async function starterOf(client: ProjectClient): Promise<Json> {
  const { scopes: _scopes, ...identity } = await api.server.services.auth.identityOf(await client.token());
  expect(identity.membershipId).toBeDefined();
  return identity;
}

async function superAdminProject(): Promise<string> {
  const [row] = await api.server.services.db.query<{ id: string }>(`SELECT id FROM resource WHERE "resourceType" = 'Project' AND content->>'superAdmin' = 'true' LIMIT 1`);
  return row.id;
}

const step = (label: string, failures?: number) => ({
  label,
  ...(failures === undefined ? {} : { failures }),
});

describe('durable jobs', () => {
  it('a job whose lease passed is resumed here from its last checkpoint', async () => {
    const label = randomUUID();
    const path = await abandonedJob(api.superAdmin, 'test-step-job', step(label), { step: 7 });
    const job = await pollJob(api.superAdmin, path);
    expect(job.status).toBe('completed');
    expect(out(job, 'resumedFrom').valueInteger).toBe(7);
    expect(attemptsByLabel.get(label)).toBe(1);
  });

  it('a job whose lease has not passed is left to its server', async () => {
    const label = randomUUID();
    const path = await abandonedJob(api.superAdmin, 'test-step-job', step(label), { step: 1 }, { leaseMs: 3_600_000 });
    // Many polls of this server's worker later.
    await sleep(1000);
    expect((await api.superAdmin.get(path)).body.status).toBe('active');
    expect(attemptsByLabel.get(label)).toBeUndefined();
    await api.superAdmin.post(`${path}/$cancel`, { resourceType: 'Parameters' });
  });

  it('a transient database error is retried, from the checkpoint', async () => {
    const label = randomUUID();
    const res = await api.superAdmin.post('/$test-step-job', { resourceType: 'Parameters', parameter: [{ name: 'label', valueString: label }, { name: 'failures', valueInteger: 2 }] }, { Prefer: 'respond-async' });
    expect(res.status, res.text).toBe(202);
    const job = await pollJob(api.superAdmin, new URL(res.headers.get('content-location')!).pathname.replace('/fhir/R4', ''));
    expect(job.status).toBe('completed');
    expect(out(job, 'runs').valueInteger).toBe(3);
  });

  it('after JOB_MAX_ATTEMPTS transient failures the job is error, with the reason', async () => {
    const label = randomUUID();
    const res = await api.superAdmin.post('/$test-step-job', { resourceType: 'Parameters', parameter: [{ name: 'label', valueString: label }, { name: 'failures', valueInteger: 5 }] }, { Prefer: 'respond-async' });
    const job = await pollJob(api.superAdmin, new URL(res.headers.get('content-location')!).pathname.replace('/fhir/R4', ''));
    expect(job.status).toBe('error');
    expect(attemptsByLabel.get(label)).toBe(3);
    expect(JSON.stringify(out(job, 'outcome').resource)).toContain('could not serialize access');
  });

  it('a job started JOB_MAX_ATTEMPTS times by servers that stopped is error, not run again', async () => {
    const label = randomUUID();
    // 5: also the default, for another server of this process that may claim it first.
    const path = await abandonedJob(api.superAdmin, 'test-step-job', step(label), { step: 2 }, { attempts: 5 });
    const job = await pollJob(api.superAdmin, path);
    expect(job.status).toBe('error');
    expect(out(job, 'outcome').resource.issue[0].details.text).toMatch(/started [35] times/);
    expect(attemptsByLabel.get(label)).toBeUndefined();
  });

  it('a job cancelled while queued is ended by the server that claims it, without running', async () => {
    const label = randomUUID();
    // Queued as a retry not yet due (first leased, so that no server claims it meanwhile).
    const path = await abandonedJob(api.superAdmin, 'test-step-job', step(label), { step: 1 }, { leaseMs: 3_600_000 });
    const id = path.split('/').pop();
    await api.server.services.db.execute(`UPDATE job SET status = 'queued', "leaseOwner" = NULL, "runAfter" = now() + interval '1 hour' WHERE id = $1`, [id]);
    const cancelled = await api.superAdmin.post(`${path}/$cancel`, { resourceType: 'Parameters' });
    expect(cancelled.status, cancelled.text).toBe(200);
    await api.server.services.db.execute(`UPDATE job SET "runAfter" = now() WHERE id = $1`, [id]);
    jobQueued(api.server.services.db);
    const job = await pollJob(api.superAdmin, path);
    expect(job.status).toBe('cancelled');
    expect(attemptsByLabel.get(label)).toBeUndefined();
  });

  it("a job runs as its starter's membership", async () => {
    const label = randomUUID();
    const project = api.newProject();
    const path = await abandonedJob(project, 'test-step-job', step(label), { step: 3 }, { identity: await starterOf(project) });
    const job = await pollJob(project, path);
    expect(job.status).toBe('completed');
    expect(attemptsByLabel.get(label)).toBe(1);
  });

  it('a job whose starter was removed from the project meanwhile ends in error without running', async () => {
    const label = randomUUID();
    const project = api.newProject();
    const identity = await starterOf(project);
    const path = await abandonedJob(project, 'test-step-job', step(label), { step: 3 }, { identity, leaseMs: 3_600_000 });
    await api.server.services.auth.repo(project.projectId).deleteResource('ProjectMembership', identity.membershipId);
    await api.server.services.db.execute(`UPDATE job SET "leaseUntil" = now() - interval '1 minute' WHERE id = $1`, [path.split('/').pop()]);
    jobQueued(api.server.services.db);
    const job = await pollJob(api.superAdmin, path);
    expect(job.status).toBe('error');
    expect(out(job, 'outcome').resource.issue[0]).toMatchObject({ code: 'forbidden', details: { text: expect.stringContaining('membership') } });
    expect(attemptsByLabel.get(label)).toBeUndefined();
  });

  it('$reindex resumes after the last batch it recorded', async () => {
    const p = api.newProject();
    const family = `Resume${randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await create(p, { resourceType: 'Patient', name: [{ family }] }));
    ids.sort();
    await api.server.services.db.execute(`DELETE FROM string_index WHERE "projectId" = $1`, [p.projectId]);
    // A reindex that had done the first two patients (batches of one) when its server stopped.
    const checkpoint = { resourceType: 'Patient', after: ids[1], byType: [{ resourceType: 'Patient', resources: 2 }] };
    const path = await abandonedJob(api.superAdmin, 'reindex', { type: ['Patient'], project: p.projectId, batchSize: 1 }, checkpoint);
    const job = await pollJob(api.superAdmin, path);
    expect(job.status).toBe('completed');
    expect(out(job, 'resources').valueInteger).toBe(3);
    // Only the third was reindexed by this run: the first two still lack their string rows.
    const found = (await p.get(`/Patient?family=${family}`)).body.entry?.map((entry: Json) => entry.resource.id) ?? [];
    expect(found).toEqual([ids[2]]);
  });

  it('Project/$clone with Prefer: respond-async runs as a job whose output is the new Project', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Cloned' }] });
    const res = await api.superAdmin.post(`/Project/${p.projectId}/$clone`, { name: 'Async clone' }, { Prefer: 'respond-async' });
    expect(res.status, res.text).toBe(202);
    const job = await pollJob(api.superAdmin, new URL(res.headers.get('content-location')!).pathname.replace('/fhir/R4', ''));
    expect(job.status).toBe('completed');
    const project = out(job, 'return').resource;
    expect(project.resourceType).toBe('Project');
    expect(project.name).toBe('Async clone');
    const cloned = await api.superAdmin.get(`/Patient?_project=${project.id}`);
    expect(cloned.body.entry).toHaveLength(1);
  });

  it('Project/$clone with Prefer: respond-async of an unknown project is 404 at once, no job', async () => {
    const res = await api.superAdmin.post(`/Project/${randomUUID()}/$clone`, {}, { Prefer: 'respond-async' });
    expect(res.status, res.text).toBe(404);
    expect(res.headers.get('content-location')).toBeNull();
  });
});
