import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { addMemberClient, bearer, sendJson, tokenRequest } from '../auth/helpers.js';

const api = await useTestServer();

const invite = async (projectId: string, token: string, body: Record<string, unknown>) =>
  sendJson(api, 'POST', `/admin/projects/${projectId}/invite`, body, bearer(token));

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
});
