import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { jobQueued } from '../../src/operations/jobs/worker.js';
import { killOnceCheckpointed, sleep } from '../helpers/job-failover.js';
import { projectClient, startServerProcess, useTestServer } from '../helpers/server.js';
import { ASYNC, exportedLines, statusPath, type Json } from './export-helpers.js';

/**
 * Two servers on one PostgreSQL: the one running an export is killed mid-way (SIGKILL, nothing
 * handed back); once its lease passes the other resumes the export after its last checkpoint
 * and finishes it: every resource in the files, none twice.
 */

const LEASE_MS = '2000';
/** This file's two servers share their jobs, and no other test server takes one of them. */
const QUEUE = `failover_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const PER_FILE = '5';
const api = await useTestServer({ ASYNC_JOB_STALE_MS: LEASE_MS, JOB_QUEUE: QUEUE, EXPORT_FILE_MAX_RESOURCES: PER_FILE });

const PATIENTS = 400;

let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
});

describe.skipIf(!process.env.DATABASE_URL)('an export whose server is killed', () => {
  it('is finished by the other server, every resource written once', async () => {
    const p = api.newProject();
    const entry = Array.from({ length: PATIENTS }, () => ({ resource: { resourceType: 'Patient', gender: 'unknown' }, request: { method: 'POST', url: 'Patient' } }));
    const bundle = await p.post('/', { resourceType: 'Bundle', type: 'transaction', entry });
    expect(bundle.status, bundle.text).toBe(200);
    const created = bundle.body.entry.map((e: Json) => /Patient\/([^/]+)/.exec(e.response.location)![1]).sort();

    const other = await startServerProcess({ ASYNC_JOB_STALE_MS: LEASE_MS, JOB_QUEUE: QUEUE, EXPORT_FILE_MAX_RESOURCES: PER_FILE });
    child = other.child;
    const onOther = projectClient(`${other.url}/fhir/R4`, p.projectId, () => p.token());
    const status = statusPath(await onOther.get('/$export?_type=Patient', ASYNC));
    const id = status.split('/').pop()!;

    // Killed once it has recorded a checkpoint (some files stored), while it runs.
    const row = await killOnceCheckpointed(api.server.services.db, id, other.child);
    expect(row?.status).toBe('running');
    expect(row?.owner).toContain(`:${other.child.pid}:`);
    expect(JSON.parse(row!.checkpoint!).files.length).toBeLessThan(PATIENTS / Number(PER_FILE));

    // This server resumes it once the lease has passed.
    let res = await p.get(status);
    while (res.status === 202) {
      jobQueued(api.server.services.db);
      await sleep(200);
      res = await p.get(status);
    }
    expect(res.status, res.text).toBe(200);
    const ids = (await exportedLines(p, res.body)).map(({ resource }) => resource.id);
    expect(ids.length).toBe(PATIENTS);
    expect(ids.sort()).toEqual(created);
    const [claims] = await api.server.services.db.query<{ attempts: number }>('SELECT attempts FROM job WHERE id = $1', [id]);
    expect(Number(claims.attempts)).toBe(2);
  }, 180_000);
});
