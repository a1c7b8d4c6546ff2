import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { bearer, getJson, sendJson } from './helpers.js';

/**
 * ProjectMembership.externalId (SPEC 2.5, 5 rule 7) and User.email (case-insensitive) name one
 * account across all projects: no write path may store a second live resource with the value.
 */
const api = await useTestServer();

const membership = (admin: ProjectClient, externalId: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'ProjectMembership',
  project: { reference: `Project/${admin.projectId}` },
  user: { reference: `Practitioner/${randomUUID()}` },
  profile: { reference: `Practitioner/${randomUUID()}` },
  externalId,
  ...extra,
});

/** Live memberships with this externalId in every project (as the super admin sees them). */
async function membershipsWith(externalId: string): Promise<any[]> {
  const res = await getJson(api, `/fhir/R4/ProjectMembership?external-id=${encodeURIComponent(externalId)}`, bearer(await api.superAdmin.token()));
  expect(res.status).toBe(200);
  return (res.body.entry ?? []).map((e: any) => e.resource);
}

async function usersWith(email: string): Promise<any[]> {
  const res = await getJson(api, `/fhir/R4/User?email=${encodeURIComponent(email)}`, bearer(await api.superAdmin.token()));
  expect(res.status).toBe(200);
  return (res.body.entry ?? []).map((e: any) => e.resource);
}

function expectConflictOn(res: { status: number; body: any }, expression: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'conflict', expression: [expression] }] });
}

describe('ProjectMembership.externalId is unique across all memberships', () => {
  it('refuses a second membership with the externalId in the same project (409 naming the field)', async () => {
    const admin = api.newProject();
    const externalId = `idp|${randomUUID()}`;
    expect((await admin.post('/ProjectMembership', membership(admin, externalId))).status).toBe(201);
    expectConflictOn(await admin.post('/ProjectMembership', membership(admin, externalId)), 'ProjectMembership.externalId');
    expect(await membershipsWith(externalId)).toHaveLength(1);
  });

  it('refuses it in another project too', async () => {
    const first = api.newProject();
    const second = api.newProject();
    const externalId = `idp|${randomUUID()}`;
    expect((await first.post('/ProjectMembership', membership(first, externalId))).status).toBe(201);
    const res = await second.post('/ProjectMembership', membership(second, externalId));
    expectConflictOn(res, 'ProjectMembership.externalId');
    // The other project is not named: the caller cannot see it.
    expect(JSON.stringify(res.body)).not.toContain(first.projectId);
    expect(await membershipsWith(externalId)).toHaveLength(1);
  });

  it('refuses an update (PUT) or patch that takes another membership externalId, and leaves it unchanged', async () => {
    const admin = api.newProject();
    const taken = `idp|${randomUUID()}`;
    const own = `idp|${randomUUID()}`;
    expect((await admin.post('/ProjectMembership', membership(admin, taken))).status).toBe(201);
    const mine = (await admin.post('/ProjectMembership', membership(admin, own))).body;
    expectConflictOn(await admin.put(`/ProjectMembership/${mine.id}`, { ...mine, externalId: taken }), 'ProjectMembership.externalId');
    expectConflictOn(
      await admin.patch(`/ProjectMembership/${mine.id}`, [{ op: 'replace', path: '/externalId', value: taken }]),
      'ProjectMembership.externalId',
    );
    const after = await admin.get(`/ProjectMembership/${mine.id}`);
    expect(after.body.externalId).toBe(own);
    expect(after.body.meta.versionId).toBe(mine.meta.versionId);
    // Keeping its own externalId is no clash.
    expect((await admin.put(`/ProjectMembership/${mine.id}`, { ...mine, admin: true })).status).toBe(200);
  });

  it('frees the externalId when the membership is deleted', async () => {
    const admin = api.newProject();
    const externalId = `idp|${randomUUID()}`;
    const first = (await admin.post('/ProjectMembership', membership(admin, externalId))).body;
    expect((await admin.delete(`/ProjectMembership/${first.id}`)).status).toBeLessThan(300);
    expect((await admin.post('/ProjectMembership', membership(admin, externalId))).status).toBe(201);
  });

  it('lets exactly one of 6 concurrent creates of one externalId succeed; the others get 409', async () => {
    const admin = api.newProject();
    await admin.token();
    const externalId = `idp|${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 6 }, () => admin.post('/ProjectMembership', membership(admin, externalId))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    for (const lost of results.filter((r) => r.status === 409)) expectConflictOn(lost, 'ProjectMembership.externalId');
    const stored = await membershipsWith(externalId);
    expect(stored.map((m) => m.id)).toEqual([results.find((r) => r.status === 201)!.body.id]);
  });

  it('lets exactly one of 6 concurrent updates to one new externalId (PUT, in two projects) succeed', async () => {
    const projects = [api.newProject(), api.newProject()];
    const externalId = `idp|${randomUUID()}`;
    const writes = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const admin = projects[i % 2];
        const created = (await admin.post('/ProjectMembership', membership(admin, `idp|${randomUUID()}`))).body;
        return { admin, created };
      }),
    );
    const results = await Promise.all(writes.map(({ admin, created }) => admin.put(`/ProjectMembership/${created.id}`, { ...created, externalId })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await membershipsWith(externalId)).toHaveLength(1);
  });

  it('makes an invite of an externalId used in another project 409, leaving nothing behind', async () => {
    const first = api.newProject();
    const second = api.newProject();
    const externalId = `idp|${randomUUID()}`;
    const lastName = `L${randomUUID().slice(0, 8)}`;
    const body = { resourceType: 'Practitioner', firstName: 'Ada', lastName, externalId };
    const ok = await sendJson(api, 'POST', `/admin/projects/${first.projectId}/invite`, body, bearer(await first.token()));
    expect(ok.status).toBe(201);
    const clash = await sendJson(api, 'POST', `/admin/projects/${second.projectId}/invite`, body, bearer(await second.token()));
    expectConflictOn(clash, 'ProjectMembership.externalId');
    const profiles = await getJson(api, `/fhir/R4/Practitioner?family=${lastName}`, bearer(await api.superAdmin.token()));
    expect(profiles.body.entry).toHaveLength(1);
  });
});

// Server-wide Users are written by super admins (test/auth/server-wide-users.test.ts); the email
// of a project-scoped User is unique within its project (test/auth/scoped-users.test.ts).
describe('User.email is unique among server-wide Users, whatever its case', () => {
  const user = (email: string) => ({ resourceType: 'User', firstName: 'Uma', lastName: 'Nique', email });
  const admin = api.superAdmin;

  it('refuses a second User with the email, in any case (409 naming the field)', async () => {
    const email = `${randomUUID()}@example.org`;
    expect((await admin.post('/User', user(email))).status).toBe(201);
    expectConflictOn(await admin.post('/User', user(email)), 'User.email');
    expectConflictOn(await admin.post('/User', user(email.toUpperCase())), 'User.email');
    expect(await usersWith(email)).toHaveLength(1);
  });

  it('refuses an update that takes another User email', async () => {
    const taken = `${randomUUID()}@example.org`;
    expect((await admin.post('/User', user(taken))).status).toBe(201);
    const mine = (await admin.post('/User', user(`${randomUUID()}@example.org`))).body;
    expectConflictOn(await admin.put(`/User/${mine.id}`, { ...mine, email: taken }), 'User.email');
    expect((await admin.put(`/User/${mine.id}`, { ...mine, firstName: 'Ursula' })).status).toBe(200);
  });

  it('lets exactly one of 6 concurrent creates of one email succeed; the others get 409', async () => {
    const email = `${randomUUID()}@example.org`;
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => admin.post('/User', user(i % 2 ? email : email.toUpperCase()))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    expect(await usersWith(email)).toHaveLength(1);
  });
});
