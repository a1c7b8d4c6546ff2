import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { enqueueJob } from '../../src/operations/jobs/queue.js';
import { ASYNC, BASE, create, poll, statusPath } from '../bulk/export-helpers.js';
import { testEnv, useTestServer } from '../helpers/server.js';

/**
 * JOB_QUEUE (docs/jobs.md): a server claims only the jobs of its own queue. Servers sharing a
 * database but not a queue (test servers, each with settings of its own) never run each other's.
 */

const api = await useTestServer();

describe('job queues', () => {
  it("a job of another queue is left queued while this server runs its own queue's jobs", async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Queued' }] });
    const { db, auth } = api.server.services;
    const asyncJob = await auth.repo(p.projectId).createResource('AsyncJob', { resourceType: 'AsyncJob', status: 'accepted', requestTime: new Date().toISOString(), request: `${BASE}/$export` });
    const foreign = asyncJob.resource.id!;
    const identity = { projectId: p.projectId, superAdmin: false, projectAdmin: true };
    // Queued first: a server claiming from every queue would take it before (or with) the export below.
    await enqueueJob(db, 'elsewhere', { id: foreign, projectId: p.projectId, operation: 'export', level: 'system', input: {}, identity, requestUrl: `${BASE}/$export` });

    const own = await poll(p, statusPath(await p.get('/$export', ASYNC)));
    expect(own.status, own.text).toBe(200);
    expect((await p.get(`/$export-status/${foreign}`)).status).toBe(202);
    const [row] = await db.query<{ status: string; attempts: number }>('SELECT status, attempts FROM job WHERE id = $1', [foreign]);
    expect({ status: row.status, attempts: Number(row.attempts) }).toEqual({ status: 'queued', attempts: 0 });
  });

  it('refuses to start with a JOB_QUEUE a job row cannot name, saying which setting', () => {
    expect(() => loadConfig(testEnv({ JOB_QUEUE: 'two words' }))).toThrow(ConfigError);
    expect(() => loadConfig(testEnv({ JOB_QUEUE: 'two words' }))).toThrow(/JOB_QUEUE must be 1-64 letters, digits or _ \. : -, got "two words"/);
  });
});
