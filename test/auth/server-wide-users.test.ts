import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { graphql, onlyError } from '../graphql/resource-helpers.js';
import { bearer, getJson, sendJson, tokenRequest } from './helpers.js';

/**
 * A server-wide User (no `project`) is one account across every project, its email unique
 * server-wide: only a super admin writes one directly. Project admins make them through invites
 * and write the Users scoped to their own project; sign-up keeps working.
 */
const api = await useTestServer({ ALLOW_SIGN_UP: 'true' });
const PASSWORD = 'correct horse battery staple';

const serverWide = (email: string) => ({ resourceType: 'User', firstName: 'Ser', lastName: 'Ver', email });

async function usersWith(email: string): Promise<any[]> {
  const res = await getJson(api, `/fhir/R4/User?email=${encodeURIComponent(email)}`, bearer(await api.superAdmin.token()));
  expect(res.status).toBe(200);
  return (res.body.entry ?? []).map((e: any) => e.resource);
}

/** A practitioner invited into the admin's project: a server-wide User stored there. */
async function invitedUser(admin: ProjectClient): Promise<any> {
  const email = `${randomUUID()}@example.org`;
  const body = { resourceType: 'Practitioner', firstName: 'In', lastName: 'Vited', externalId: randomUUID(), email, password: PASSWORD };
  const res = await sendJson(api, 'POST', `/admin/projects/${admin.projectId}/invite`, body, bearer(await admin.token()));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return (await admin.get(`/${res.body.user.reference}`)).body;
}

function expectRefused(res: { status: number; body: any }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body.issue[0]).toMatchObject({ code: 'forbidden', expression: ['User.project'] });
  expect(res.body.issue[0].diagnostics ?? res.body.issue[0].details?.text).toMatch(/super admin/);
}

describe('server-wide Users are written by super admins only', () => {
  it('refuses a project admin’s create of a User without project (403 naming User.project), and the email stays free for its owner', async () => {
    const admin = api.newProject();
    const email = `${randomUUID()}@example.org`;
    expectRefused(await admin.post('/User', serverWide(email)));
    expect(await usersWith(email)).toHaveLength(0);
    const signUp = await sendJson(api, 'POST', '/auth/newuser', { firstName: 'Own', lastName: 'Er', email, password: PASSWORD });
    expect(signUp.status, JSON.stringify(signUp.body)).toBe(200);
  });

  it('lets a super admin create one, and a project admin create a User scoped to its own project', async () => {
    const admin = api.newProject();
    const email = `${randomUUID()}@example.org`;
    expect((await api.superAdmin.post('/User', serverWide(email))).status).toBe(201);
    const scoped = await admin.post('/User', { ...serverWide(email), project: { reference: `Project/${admin.projectId}` } });
    expect(scoped.status, JSON.stringify(scoped.body)).toBe(201);
  });

  it('refuses a project admin’s update of an invited practitioner’s User, and making it project-scoped', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    expectRefused(await admin.put(`/User/${user.id}`, { ...user, firstName: 'Changed' }));
    expectRefused(await admin.put(`/User/${user.id}`, { ...user, project: { reference: `Project/${admin.projectId}` } }));
    expect((await admin.get(`/User/${user.id}`)).body.meta.versionId).toBe(user.meta.versionId);
    const signIn = await tokenRequest(api, { grant_type: 'password', username: user.email, password: PASSWORD });
    expect(signIn.status, JSON.stringify(signIn.body)).toBe(200);
  });

  it('refuses a project admin’s patch of a server-wide User, and one removing a project-scoped User’s project', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const patch = (ops: unknown) => admin.patch(`/User/${user.id}`, ops, { 'Content-Type': 'application/json-patch+json' });
    expectRefused(await patch([{ op: 'replace', path: '/email', value: `${randomUUID()}@example.org` }]));
    const scoped = await admin.post('/User', { ...serverWide(`${randomUUID()}@example.org`), project: { reference: `Project/${admin.projectId}` } });
    const unscope = await admin.patch(`/User/${scoped.body.id}`, [{ op: 'remove', path: '/project' }], { 'Content-Type': 'application/json-patch+json' });
    expectRefused(unscope);
  });

  it('refuses a project admin’s delete of a server-wide User, and takes that of a User scoped to its project', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const refused = await admin.delete(`/User/${user.id}`);
    expectRefused(refused);
    expect(refused.body.issue[0].diagnostics ?? refused.body.issue[0].details?.text).toMatch(/delete/);
    expect((await tokenRequest(api, { grant_type: 'password', username: user.email, password: PASSWORD })).status).toBe(200);
    const scoped = await admin.post('/User', { ...serverWide(`${randomUUID()}@example.org`), project: { reference: `Project/${admin.projectId}` } });
    expect((await admin.delete(`/User/${scoped.body.id}`)).status).toBeLessThan(300);
  });

  it('refuses the entry of a batch and a whole transaction that create one', async () => {
    const admin = api.newProject();
    const email = `${randomUUID()}@example.org`;
    const entry = { resource: serverWide(email), request: { method: 'POST', url: 'User' } };
    const batch = await admin.post('', { resourceType: 'Bundle', type: 'batch', entry: [entry] });
    expect(batch.status).toBe(200);
    expect(batch.body.entry[0].response.status).toMatch(/^403/);
    expect(batch.body.entry[0].response.outcome.issue[0].expression).toEqual(['User.project']);
    const transaction = await admin.post('', { resourceType: 'Bundle', type: 'transaction', entry: [entry] });
    expect(transaction.status).toBe(403);
    expect(await usersWith(email)).toHaveLength(0);
  });

  it('refuses a GraphQL UserCreate without project', async () => {
    const admin = api.newProject();
    const email = `${randomUUID()}@example.org`;
    const res = await graphql(api, admin, `mutation { UserCreate(res: { firstName: "G", lastName: "Q", email: "${email}" }) { id } }`);
    expect(onlyError(res).code).toBe('forbidden');
    expect(await usersWith(email)).toHaveLength(0);
  });
});
