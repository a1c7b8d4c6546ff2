import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { jobQueued } from '../../src/operations/jobs/worker.js';
import { killOnceCheckpointed, sleep } from '../helpers/job-failover.js';
import { startServerProcess, superAdminClient, useTestServer } from '../helpers/server.js';

/**
 * Two servers on one PostgreSQL: the one running a job is killed mid-way (SIGKILL, nothing
 * handed back); once its lease passes the other resumes the job from its last checkpoint and
 * finishes it, each resource counted once.
 */

const LEASE_MS = '2000';
/** This file's two servers share their jobs, and no other test server takes one of them. */
const QUEUE = `failover_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const api = await useTestServer({ ASYNC_JOB_STALE_MS: LEASE_MS, JOB_QUEUE: QUEUE });

type Json = any;

const PATIENTS = 400;

let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
});

describe.skipIf(!process.env.DATABASE_URL)('a job whose server is killed', () => {
  it('is finished by the other server, from its checkpoint, exactly once', async () => {
    const p = api.newProject();
    const family = `Failover${Date.now()}`;
    const entry = Array.from({ length: PATIENTS }, () => ({ resource: { resourceType: 'Patient', name: [{ family }] }, request: { method: 'POST', url: 'Patient' } }));
    const bundle = await p.post('/', { resourceType: 'Bundle', type: 'transaction', entry });
    expect(bundle.status, bundle.text).toBe(200);
    // Without their name rows the patients are found again only once reindexed.
    await api.server.services.db.execute(`DELETE FROM string_index WHERE "projectId" = $1`, [p.projectId]);

    const other = await startServerProcess({ ASYNC_JOB_STALE_MS: LEASE_MS, JOB_QUEUE: QUEUE });
    child = other.child;
    const body = { resourceType: 'Parameters', parameter: [{ name: 'type', valueCode: 'Patient' }, { name: 'project', valueString: p.projectId }, { name: 'batchSize', valuePositiveInt: 1 }] };
    const started = await superAdminClient(other.url).post('/$reindex', body, { Prefer: 'respond-async' });
    expect(started.status, started.text).toBe(202);
    const id = started.headers.get('content-location')!.split('/').pop()!;

    // Killed once it has recorded a checkpoint (some batches committed), while it runs.
    const row = await killOnceCheckpointed(api.server.services.db, id, other.child);
    expect(row?.status).toBe('running');
    expect(row?.owner).toContain(`:${other.child.pid}:`);
    const done = JSON.parse(row!.checkpoint!).byType[0].resources as number;
    expect(done).toBeLessThan(PATIENTS);

    // This server resumes it once the lease has passed.
    let job: Json;
    for (;;) {
      job = (await api.superAdmin.get(`/AsyncJob/${id}`)).body;
      if (job.transactionTime !== undefined) break;
      jobQueued(api.server.services.db);
      await sleep(200);
    }
    expect(job.status).toBe('completed');
    const resources = job.output.parameter.find((parameter: Json) => parameter.name === 'resources').valueInteger;
    expect(resources).toBe(PATIENTS);
    const [claims] = await api.server.services.db.query<{ attempts: number }>('SELECT attempts FROM job WHERE id = $1', [id]);
    expect(Number(claims.attempts)).toBe(2);
    const found = await p.get(`/Patient?family=${family}&_summary=count`);
    expect(found.body.total).toBe(PATIENTS);
    const versions = (await api.superAdmin.get(`/AsyncJob/${id}/_history`)).body.entry.filter((e: Json) => e.resource.status === 'completed');
    expect(versions).toHaveLength(1);
  }, 180_000);
});
