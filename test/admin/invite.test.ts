import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, sendJson, tokenRequest } from '../auth/helpers.js';

const api = await useTestServer();

const invite = async (projectId: string, token: string, body: Record<string, unknown>) =>
  sendJson(api, 'POST', `/admin/projects/${projectId}/invite`, body, bearer(token));

/** Search as the super admin (every project): the matching resources. */
async function find(query: string): Promise<any[]> {
  const res = await getJson(api, `/fhir/R4/${query}`, bearer(await api.superAdmin.token()));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.entry ?? []).map((e: any) => e.resource);
}

describe('POST /admin/projects/{id}/invite', () => {
  it('creates the profile, the user and the membership carrying externalId; 409 on a repeated externalId', async () => {
    const admin = api.newProject();
    const token = await admin.token();
    const externalId = `auth0|${randomUUID()}`;
    const email = `${randomUUID()}@example.org`;
    const res = await invite(admin.projectId, token, {
      resourceType: 'Practitioner',
      firstName: 'Ada',
      lastName: 'Lovelace',
      externalId,
      email,
      password: 'correct horse battery staple',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      resourceType: 'ProjectMembership',
      externalId,
      project: { reference: `Project/${admin.projectId}` },
      admin: false,
    });
    expect(res.body.meta.project).toBe(admin.projectId);
    const profile = await admin.get(`/${res.body.profile.reference}`);
    expect(profile.body).toMatchObject({ resourceType: 'Practitioner', name: [{ given: ['Ada'], family: 'Lovelace' }] });
    const user = await admin.get(`/${res.body.user.reference}`);
    expect(user.body).toMatchObject({ resourceType: 'User', email, firstName: 'Ada' });
    // The invited user can sign in with the password.
    const login = await tokenRequest(api, { grant_type: 'password', username: email, password: 'correct horse battery staple' });
    expect(login.status).toBe(200);
    expect(login.body.project.reference).toBe(`Project/${admin.projectId}`);
    const again = await invite(admin.projectId, token, { resourceType: 'Practitioner', firstName: 'B', lastName: 'C', externalId });
    expect(again.status).toBe(409);
    expect(again.body.resourceType).toBe('OperationOutcome');
  });

  it('invites without an email (no User), as an admin, with an access policy', async () => {
    const admin = api.newProject();
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'p', resource: [{ resourceType: 'Patient' }] });
    const res = await invite(admin.projectId, await admin.token(), {
      resourceType: 'Patient',
      firstName: 'Pat',
      lastName: 'Ient',
      externalId: randomUUID(),
      admin: true,
      accessPolicy: { reference: `AccessPolicy/${policy.body.id}` },
    });
    expect(res.status).toBe(201);
    expect(res.body.admin).toBe(true);
    expect(res.body.accessPolicy).toEqual({ reference: `AccessPolicy/${policy.body.id}` });
    expect(res.body.profile.reference).toMatch(/^Patient\//);
  });

  it('is for project admins and super admins only', async () => {
    const admin = api.newProject();
    const other = api.newProject();
    const body = { resourceType: 'Practitioner', firstName: 'A', lastName: 'B', externalId: randomUUID() };
    const member = await addMemberClient(api, admin);
    expect((await invite(admin.projectId, member.token, body)).status).toBe(403);
    expect((await invite(admin.projectId, await other.token(), body)).status).toBe(403);
    expect((await sendJson(api, 'POST', `/admin/projects/${admin.projectId}/invite`, body)).status).toBe(401);
    expect((await invite(admin.projectId, await api.superAdmin.token(), body)).status).toBe(201);
    expect((await invite(randomUUID(), await api.superAdmin.token(), body)).status).toBe(404);
    const bad = await invite(admin.projectId, await admin.token(), { resourceType: 'Practitioner', firstName: 'A' });
    expect(bad.status).toBe(400);
    expect(bad.body.issue[0].code).toBe('invalid');
  });

  it('refuses a NUL (U+0000) in a field with 400 naming it, and writes nothing', async () => {
    const admin = api.newProject();
    const token = await admin.token();
    const externalId = `auth0|${randomUUID()}`;
    for (const [field, value] of [['externalId', `${externalId}\u0000`], ['lastName', 'Love\u0000lace']]) {
      const res = await invite(admin.projectId, token, { resourceType: 'Practitioner', firstName: 'Ada', lastName: 'Lovelace', externalId, [field]: value });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: [field] });
      expect(res.body.issue[0].details.text).toContain('NUL');
    }
    expect(await find(`Practitioner?_project=${admin.projectId}&name=Lovelace`)).toEqual([]);
  });

  it('makes one User and one membership of concurrent invites of one email and externalId; the others get 409', async () => {
    const admin = api.newProject();
    const token = await admin.token();
    const externalId = `auth0|${randomUUID()}`;
    const email = `${randomUUID()}@example.org`;
    const lastName = `L${randomUUID().slice(0, 8)}`;
    const body = { resourceType: 'Practitioner', firstName: 'Ada', lastName, externalId, email, password: 'pa55word!' };
    const results = await Promise.all(Array.from({ length: 6 }, () => invite(admin.projectId, token, body)));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    for (const lost of results.filter((r) => r.status === 409)) {
      expect(lost.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'conflict' }] });
    }
    const users = await find(`User?email=${encodeURIComponent(email)}`);
    expect(users).toHaveLength(1);
    const memberships = await find(`ProjectMembership?external-id=${encodeURIComponent(externalId)}`);
    expect(memberships).toHaveLength(1);
    expect(memberships[0].user.reference).toBe(`User/${users[0].id}`);
    expect(memberships[0]).toEqual(results.find((r) => r.status === 201)!.body);
    // The losers left no profile behind.
    expect(await find(`Practitioner?family=${lastName}`)).toHaveLength(1);
  });

  it('makes one User of concurrent invites of one new email with different externalIds', async () => {
    const admin = api.newProject();
    const token = await admin.token();
    const email = `${randomUUID()}@example.org`;
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        invite(admin.projectId, token, { resourceType: 'Practitioner', firstName: 'Bo', lastName: `B${i}`, externalId: randomUUID(), email }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    const users = await find(`User?email=${encodeURIComponent(email)}`);
    expect(users).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.user.reference))).toEqual(new Set([`User/${users[0].id}`]));
  });
});
