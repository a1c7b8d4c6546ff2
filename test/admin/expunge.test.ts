import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, sendJson } from '../auth/helpers.js';
import { expungeProject } from '../../src/admin/project-expunge.js';

/**
 * `$expunge`: a resource, or a whole project, removed for good. Checked by counting rows of every
 * table the catalog lists with a "projectId" column, so that a table added later is counted too.
 */
const api = await useTestServer();
const db = () => api.server.services.db;
type Json = any;

/** Rows of the project in every table with a "projectId" column, by table (tables without rows left out). */
async function projectRows(projectId: string): Promise<Record<string, number>> {
  const tables = await db().query<{ table: string }>(
    `SELECT table_name::text AS table FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'projectId'`,
  );
  const counts: Record<string, number> = {};
  for (const { table } of tables) {
    const [row] = await db().query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE "projectId" = $1`, [projectId]);
    if (row.n > 0) counts[table] = row.n;
  }
  return counts;
}

/** Rows of one resource in the resource, history and index tables, by table (empty tables left out). */
async function resourceRows(resourceType: string, id: string): Promise<Record<string, number>> {
  const tables = await db().query<{ table: string }>(
    `SELECT table_name::text AS table FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'resourceId'`,
  );
  const counts: Record<string, number> = {};
  const count = async (table: string, column: string) => {
    const [row] = await db().query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE "resourceType" = $1 AND "${column}" = $2`, [resourceType, id]);
    if (row.n > 0) counts[table] = row.n;
  };
  await count('resource', 'id');
  await count('resource_history', 'id');
  for (const { table } of tables) if (table.endsWith('_index')) await count(table, 'resourceId');
  return counts;
}

async function chunkRows(keyPrefix: string): Promise<number> {
  const [row] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM binary_chunk WHERE key LIKE $1', [`${keyPrefix}%`]);
  return row.n;
}

async function terminologyRows(systemIds: readonly string[]): Promise<number> {
  let total = 0;
  for (const table of ['terminology_concept', 'terminology_designation', 'terminology_property', 'terminology_closure', 'terminology_hierarchy']) {
    const [row] = await db().query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE "systemId"::text = ANY($1::text[])`, [systemIds]);
    total += row.n;
  }
  return total;
}

const expunge = (client: ProjectClient, path: string, headers: Record<string, string> = {}) => client.request('POST', `${path}/$expunge`, undefined, headers);

async function pollJob(location: string): Promise<Json> {
  const path = location.slice('http://localhost/fhir/R4'.length);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await api.superAdmin.get(path);
    if (res.body.transactionTime !== undefined) return res.body;
    if (Date.now() > deadline) throw new Error(`AsyncJob still ${res.body.status}: ${res.text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function patientWithHistory(client: ProjectClient): Promise<string> {
  const created = await client.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Gone' }], identifier: [{ system: 'urn:x', value: randomUUID() }] });
  await client.put(`/Patient/${created.body.id}`, { ...created.body, birthDate: '1970-01-01' });
  return created.body.id;
}

describe('$expunge on a resource', () => {
  it('removes every version and index row of the resource: a read is 404 afterwards', async () => {
    const client = api.newProject();
    const id = await patientWithHistory(client);
    expect(Object.keys(await resourceRows('Patient', id)).length).toBeGreaterThan(2);
    const res = await expunge(client, `/Patient/${id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.parameter).toEqual([{ name: 'resources', valueInteger: 1 }]);
    expect(await resourceRows('Patient', id)).toEqual({});
    expect((await client.get(`/Patient/${id}`)).status).toBe(404);
    expect((await client.get(`/Patient/${id}/_history`)).status).toBe(404);
  });

  it('removes the bytes of every version of a Binary', async () => {
    const client = api.newProject();
    const created = await client.request('POST', '/Binary', Buffer.from('first'), { 'Content-Type': 'text/plain' });
    await client.request('PUT', `/Binary/${created.body.id}`, Buffer.from('second'), { 'Content-Type': 'text/plain' });
    const prefix = `${client.projectId}/${created.body.id}/`;
    expect(await chunkRows(prefix)).toBe(2);
    expect((await expunge(client, `/Binary/${created.body.id}`)).status).toBe(200);
    const [objects] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM binary_content WHERE key LIKE $1', [`${prefix}%`]);
    expect({ chunks: await chunkRows(prefix), objects: objects.n }).toEqual({ chunks: 0, objects: 0 });
  });

  it('is refused (403) to a member who is not a project admin, and leaves the resource', async () => {
    const admin = api.newProject();
    const id = await patientWithHistory(admin);
    const member = await addMemberClient(api, admin, { admin: false });
    const res = await sendJson(api, 'POST', `/fhir/R4/Patient/${id}/$expunge`, {}, bearer(member.token));
    expect(res.status).toBe(403);
    expect((await admin.get(`/Patient/${id}`)).status).toBe(200);
  });

  it('refuses a User to a project admin (403): accounts belong to the whole server', async () => {
    const admin = api.newProject();
    const invited = await sendJson(api, 'POST', `/admin/projects/${admin.projectId}/invite`,
      { resourceType: 'Practitioner', firstName: 'A', lastName: 'B', email: `${randomUUID()}@example.org`, externalId: `ext|${randomUUID()}` }, bearer(await admin.token()));
    expect((await expunge(admin, `/${invited.body.user.reference}`)).status).toBe(403);
    expect((await api.superAdmin.get(`/${invited.body.user.reference}`)).status).toBe(200);
  });

  it("is 404 on another project's resource", async () => {
    const owner = api.newProject();
    const id = await patientWithHistory(owner);
    expect((await expunge(api.newProject(), `/Patient/${id}`)).status).toBe(404);
    expect((await owner.get(`/Patient/${id}`)).status).toBe(200);
  });
});

describe('$expunge on a Project', () => {
  it('removes every row stored for the project, as an AsyncJob in batches', async () => {
    const client = api.newProject();
    await patientWithHistory(client);
    await client.post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' } });
    await client.request('POST', '/Binary', Buffer.from('bytes'), { 'Content-Type': 'text/plain' });
    await client.post('/CodeSystem', { resourceType: 'CodeSystem', url: `urn:cs:${randomUUID()}`, status: 'active', content: 'complete', concept: [{ code: 'a' }, { code: 'b' }] });
    const systems = await db().query<{ id: string }>('SELECT id::text AS id FROM terminology_system WHERE "projectId" = $1', [client.projectId]);
    expect(systems.length).toBe(1);
    expect(await terminologyRows(systems.map((s) => s.id))).toBeGreaterThan(0);

    const res = await api.superAdmin.request('POST', `/Project/${client.projectId}/$expunge?everything=true&batchSize=2`, undefined, { Prefer: 'respond-async' });
    expect(res.status, res.text).toBe(202);
    const job = await pollJob(res.headers.get('content-location')!);
    expect(job.status, JSON.stringify(job)).toBe('completed');

    expect(await projectRows(client.projectId)).toEqual({});
    expect(await chunkRows(`${client.projectId}/`)).toBe(0);
    expect(await terminologyRows(systems.map((s) => s.id))).toBe(0);
    expect((await api.superAdmin.get(`/Project/${client.projectId}`)).status).toBe(404);
  });

  it('keeps a User of the project who is a member of another project, and removes one who is not', async () => {
    const expunged = api.newProject();
    const other = api.newProject();
    const invite = async (client: ProjectClient, email: string) =>
      sendJson(api, 'POST', `/admin/projects/${client.projectId}/invite`, { resourceType: 'Practitioner', firstName: 'A', lastName: 'B', email, externalId: `ext|${randomUUID()}` }, bearer(await client.token()));
    const email = `${randomUUID()}@example.org`;
    const shared = await invite(expunged, email);
    expect(shared.status, JSON.stringify(shared.body)).toBe(201);
    expect((await invite(other, email)).body.user.reference).toBe(shared.body.user.reference);
    const alone = await invite(expunged, `${randomUUID()}@example.org`);

    const res = await sendJson(api, 'POST', `/fhir/R4/Project/${expunged.projectId}/$expunge?everything=true`, {}, bearer(await api.superAdmin.token()));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await api.superAdmin.get(`/${shared.body.user.reference}`)).status).toBe(200);
    expect((await api.superAdmin.get(`/${alone.body.user.reference}`)).status).toBe(404);
    // What is left of the project is the kept User's own rows.
    expect(await projectRows(expunged.projectId)).toEqual(await resourceRows('User', shared.body.user.reference.split('/')[1]));
  });

  it('finishes on a second run what an interrupted run left', async () => {
    const client = api.newProject();
    for (let i = 0; i < 3; i++) await client.post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: `x${i}` } });
    const stop = new AbortController();
    const removed = await expungeProject(api.server.services.auth.storageServices, client.projectId, {
      batchSize: 2,
      signal: stop.signal,
      onProgress: async () => stop.abort(),
    });
    expect(removed).toBe(2);
    expect((await api.superAdmin.get(`/Project/${client.projectId}`)).status).toBe(200);

    const res = await sendJson(api, 'POST', `/fhir/R4/Project/${client.projectId}/$expunge?everything=true`, {}, bearer(await api.superAdmin.token()));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await projectRows(client.projectId)).toEqual({});
  });

  it('is for super admins only (403), and needs everything=true (400)', async () => {
    const client = api.newProject();
    expect((await expunge(client, `/Project/${client.projectId}`)).status).toBe(403);
    expect((await expunge(api.superAdmin, `/Project/${client.projectId}`)).status).toBe(400);
    expect((await client.get('/Patient')).status).toBe(200);
  });
});
