import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_URL } from '../../src/admin/async-job.js';
import { PROGRESS_INTERVAL_MS } from '../../src/operations/jobs/async-job-record.js';
import type { OperationDefinition } from '../../src/operations/definition.js';
import { registerOperation } from '../../src/operations/registry.js';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient, type TestResponse } from '../helpers/server.js';
import { create, found } from '../search-api/helpers.js';

/**
 * Asynchronous operations: `Prefer: respond-async` on `$reindex` gives 202 and an AsyncJob to poll
 * (accepted → active → completed | error | cancelled), and `AsyncJob/$cancel` stops a running job.
 */

const api = await useTestServer();

type Json = any;

const ASYNC = { Prefer: 'respond-async' };
const INDEX_TABLES = ['token_index', 'string_index', 'date_index', 'number_index', 'quantity_index', 'reference_index', 'uri_index', 'composite_index'];

const parameters = (...parameter: Json[]) => ({ resourceType: 'Parameters', ...(parameter.length > 0 ? { parameter } : {}) });
const projectParameter = (client: ProjectClient) => ({ name: 'project', valueString: client.projectId });

async function dropIndexRows(resourceType: string, id: string): Promise<void> {
  for (const table of INDEX_TABLES) {
    await api.server.services.db.execute(`DELETE FROM ${table} WHERE "resourceType" = $1 AND "resourceId" = $2`, [resourceType, id]);
  }
}

/** The AsyncJob path of a 202 answer, checking its shape. */
function acceptedJob(res: TestResponse<Json>): string {
  expect(res.status, res.text).toBe(202);
  const location = res.headers.get('content-location');
  // Absolute, under the server's FHIR base (BASE_URL of the test server: http://localhost/).
  expect(location).toMatch(/^http:\/\/localhost\/fhir\/R4\/AsyncJob\/[0-9a-f-]{36}$/);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].severity).toBe('information');
  return location!.slice('http://localhost/fhir/R4'.length);
}

/** Polls the job (as the super admin) until `done` holds; fails after 30 s. */
async function pollJob(path: string, done: (job: Json) => boolean, client: ProjectClient = api.superAdmin): Promise<Json> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await client.get(path);
    expect(res.status, res.text).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`AsyncJob still ${res.body.status}: ${res.text}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const stopped = (job: Json) => job.transactionTime !== undefined;
const out = (job: Json, name: string) => job.output?.parameter?.filter((p: Json) => p.name === name) ?? [];

describe('$reindex with Prefer: respond-async', () => {
  it('answers 202 with Content-Location, and the AsyncJob completes with the result', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Async' }] });
    const observation = await create(p, {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
      subject: { reference: `Patient/${patient}` },
      valueQuantity: { value: 72, system: 'http://unitsofmeasure.org', code: '/min' },
    });
    await dropIndexRows('Patient', patient);
    await dropIndexRows('Observation', observation);
    expect(await found(p, '/Patient?name=async')).toEqual([]);
    expect(await found(p, '/Observation?code-value-quantity=http://loinc.org|8867-4$gt70')).toEqual([]);

    const started = Date.now();
    const types = [{ name: 'type', valueCode: 'Patient' }, { name: 'type', valueCode: 'Observation' }];
    const res = await api.superAdmin.post('/$reindex', parameters(projectParameter(p), ...types), ASYNC);
    const path = acceptedJob(res);
    const job = await pollJob(path, (j) => j.status !== 'accepted' && j.status !== 'active');
    expect(job.status, JSON.stringify(job)).toBe('completed');
    expect(job.resourceType).toBe('AsyncJob');
    expect(job.request).toBe('http://localhost/fhir/R4/$reindex');
    expect(Date.parse(job.requestTime)).toBeGreaterThanOrEqual(started - 1000);
    expect(Date.parse(job.transactionTime)).toBeGreaterThanOrEqual(Date.parse(job.requestTime));
    expect(out(job, 'resources')[0].valueInteger).toBe(2);
    expect(out(job, 'byType').map((entry: Json) => entry.part)).toEqual([
      [{ name: 'type', valueCode: 'Patient' }, { name: 'resources', valueInteger: 1 }],
      [{ name: 'type', valueCode: 'Observation' }, { name: 'resources', valueInteger: 1 }],
    ]);
    // The rows are back.
    expect(await found(p, '/Patient?name=async')).toEqual([patient]);
    expect(await found(p, '/Observation?code-value-quantity=http://loinc.org|8867-4$gt70')).toEqual([observation]);
    // The job's history shows it went through active.
    const history = await api.superAdmin.get(`${path}/_history`);
    const statuses: string[] = history.body.entry.map((entry: Json) => entry.resource.status).reverse();
    expect(statuses.filter((status, i) => status !== statuses[i - 1])).toEqual(['accepted', 'active', 'completed']);
  });

  it('without the header answers synchronously, as before', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient' });
    const res = await api.superAdmin.post('/$reindex', parameters(projectParameter(p), { name: 'type', valueCode: 'Patient' }));
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-location')).toBeNull();
    expect(res.body.resourceType).toBe('Parameters');
    expect(res.body.parameter[0]).toEqual({ name: 'resources', valueInteger: 1 });
  });

  it('is 403 for anyone but a super admin, and starts no job', async () => {
    const p = api.newProject();
    const res = await p.post('/$reindex', parameters(projectParameter(p)), ASYNC);
    expect(res.status, res.text).toBe(403);
    expect(res.headers.get('content-location')).toBeNull();
    expect(await found(p, '/AsyncJob')).toEqual([]);
  });

  it('answers a mistake in the input at once (400), without a job', async () => {
    const res = await api.superAdmin.post('/$reindex', parameters({ name: 'project', valueString: 'no-such-project' }), ASYNC);
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('no-such-project');
    const type = await api.superAdmin.post('/$reindex', parameters({ name: 'type', valueCode: 'Spaceship' }), ASYNC);
    expect(type.status, type.text).toBe(400);
    const batch = await api.superAdmin.post('/$reindex', parameters({ name: 'batchSize', valuePositiveInt: 20_000 }), ASYNC);
    expect(batch.status, batch.text).toBe(400);
  });

  it('AsyncJob/$cancel stops a running reindex between batches', async () => {
    const p = api.newProject();
    const total = 150;
    for (let i = 0; i < total; i += 15) {
      await Promise.all(Array.from({ length: 15 }, () => create(p, { resourceType: 'Patient', name: [{ family: 'Many' }] })));
    }
    const res = await api.superAdmin.post(
      '/$reindex',
      parameters(projectParameter(p), { name: 'type', valueCode: 'Patient' }, { name: 'batchSize', valuePositiveInt: 1 }),
      ASYNC,
    );
    const path = acceptedJob(res);
    await pollJob(path, (job) => job.status === 'active');
    const cancel = await api.superAdmin.post(`${path}/$cancel`, parameters());
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body.resourceType).toBe('OperationOutcome');
    expect(cancel.body.issue[0].severity).toBe('information');
    const job = await pollJob(path, stopped);
    expect(job.status).toBe('cancelled');
    // It recorded what it did before stopping: fewer than all.
    const done = out(job, 'resources')[0]?.valueInteger ?? 0;
    expect(done).toBeLessThan(total);
    // Nothing more happens to it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await api.superAdmin.get(path)).body.meta.versionId).toBe(job.meta.versionId);
    // A stopped job cannot be cancelled again.
    const again = await api.superAdmin.post(`${path}/$cancel`, parameters());
    expect(again.status, again.text).toBe(400);
    expect(again.body.issue[0].details.text).toContain('cancelled');
    // Reindexing again is safe: every resource is indexed once.
    expect((await api.superAdmin.post('/$reindex', parameters(projectParameter(p)))).status).toBe(200);
    const count = await p.get('/Patient?name=many&_summary=count');
    expect(count.body.total).toBe(total);
  }, 60_000);

  it("is invisible to other projects' admins, who cannot cancel it", async () => {
    const p = api.newProject();
    await p.token();
    const res = await api.superAdmin.post('/$reindex', parameters(projectParameter(p)), ASYNC);
    const path = acceptedJob(res);
    expect((await p.get(path)).status).toBe(404);
    expect((await p.post(`${path}/$cancel`, parameters())).status).toBe(404);
    await pollJob(path, stopped);
  });
});

// A test-only operation whose handler the test drives: it reports progress, waits, and may fail.
let release: (outcome: 'finish' | 'fail') => void = () => {};
const slowDefinition: OperationDefinition = {
  resourceType: 'OperationDefinition',
  id: 'test-slow-job',
  url: 'http://flint.test/OperationDefinition/test-slow-job',
  status: 'active',
  kind: 'operation',
  code: 'test-slow-job',
  system: true,
  type: false,
  instance: false,
  affectsState: true,
  parameter: [{ name: 'steps', use: 'out', min: 1, max: '1', type: 'integer' }],
};
afterAll(
  registerOperation({
    definition: slowDefinition,
    respondsAsync: true,
    async handler(_input, { job }) {
      let steps = 0;
      let outcome: 'finish' | 'fail' | undefined;
      const released = new Promise<'finish' | 'fail'>((resolve) => (release = resolve)).then((value) => (outcome = value));
      // One step every 50 ms until released or cancelled; progress after each.
      while (!outcome && !job?.signal.aborted) {
        await Promise.race([released, new Promise((resolve) => setTimeout(resolve, 50))]);
        steps++;
        await job?.progress({ steps });
      }
      if (outcome === 'fail') throw new Error('the slow job broke');
      return { steps };
    },
  }),
);

describe('asynchronous jobs', () => {
  it('are active while running, with their progress in output', async () => {
    const path = acceptedJob(await api.superAdmin.post('/$test-slow-job', parameters(), ASYNC));
    const job = await pollJob(path, (j) => j.status === 'active' && out(j, 'steps').length > 0);
    expect(out(job, 'steps')[0].valueInteger).toBeGreaterThan(0);
    expect(job.transactionTime).toBeUndefined();
    // Written at most once a second.
    const versions = (await api.superAdmin.get(`${path}/_history`)).body.entry.length;
    expect(versions).toBeLessThanOrEqual(3 + Math.ceil((Date.now() - Date.parse(job.requestTime)) / PROGRESS_INTERVAL_MS));
    release('finish');
    const done = await pollJob(path, stopped);
    expect(done.status).toBe('completed');
    expect(out(done, 'steps')[0].valueInteger).toBeGreaterThan(0);
  });

  it('a failing job ends in error with the outcome', async () => {
    const path = acceptedJob(await api.superAdmin.post('/$test-slow-job', parameters(), ASYNC));
    // Its first progress report: the handler runs and `release` is its own (not a job's before).
    await pollJob(path, (j) => j.status === 'active' && out(j, 'steps').length > 0);
    release('fail');
    const job = await pollJob(path, stopped);
    expect(job.status).toBe('error');
    expect(out(job, 'outcome')[0].resource.resourceType).toBe('OperationOutcome');
    expect(out(job, 'outcome')[0].resource.issue[0].code).toBe('exception');
  });

  it('a job cancelled in the database (as another server would) stops at its next progress report', async () => {
    const path = acceptedJob(await api.superAdmin.post('/$test-slow-job', parameters(), ASYNC));
    const active = await pollJob(path, (j) => j.status === 'active');
    // Not through $cancel here: only the stored status changes, as when another server cancels it.
    let written;
    do {
      const current = (await api.superAdmin.get(path)).body;
      // A progress write in between is 412: read again.
      written = await api.superAdmin.put(path, { ...current, status: 'cancelled' }, { 'If-Match': `W/"${current.meta.versionId}"` });
    } while (written.status === 412);
    expect(written.status, written.text).toBe(200);
    const job = await pollJob(path, stopped);
    expect(job.status).toBe('cancelled');
    expect(active.status).toBe('active');
  });

  it('are written by the server only: a client cannot create or change an AsyncJob (403)', async () => {
    const client = api.newProject();
    const made = await client.post('/AsyncJob', { resourceType: 'AsyncJob', status: 'completed', requestTime: '2026-01-01T00:00:00Z', request: 'x' });
    expect(made.status, made.text).toBe(403);
    expect(made.body.issue[0].diagnostics ?? made.body.issue[0].details?.text).toContain('written by the server only');
  });

  it('$cancel is 403 for a project member who is not an admin, 404 for an unknown job', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    // A job of the admin's project, as the server writes them (clients cannot), with a lease that
    // keeps the servers' sweeps of stale jobs away while the test runs.
    const lease = { url: LEASE_URL, valueInstant: new Date(Date.now() + 3_600_000).toISOString() };
    const written = await api.server.services.auth.repo(admin.projectId).createResource('AsyncJob', {
      resourceType: 'AsyncJob',
      status: 'active',
      requestTime: new Date().toISOString(),
      request: 'http://localhost/x',
      extension: [lease],
    });
    const job = written.resource.id!;
    const refused = await client.post(`/AsyncJob/${job}/$cancel`, parameters());
    expect(refused.status, refused.text).toBe(403);
    expect((await admin.get(`/AsyncJob/${job}`)).body.status).toBe('active');
    // The project's admin may: a job no server runs (its server stopped) becomes cancelled.
    expect((await admin.post(`/AsyncJob/${job}/$cancel`, parameters())).status).toBe(200);
    expect((await admin.get(`/AsyncJob/${job}`)).body.status).toBe('cancelled');
    const missing = await api.superAdmin.post('/AsyncJob/00000000-0000-4000-8000-000000000000/$cancel', parameters());
    expect(missing.status, missing.text).toBe(404);
  });
});
