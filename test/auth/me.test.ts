import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, clientToken, getJson, sendJson, tokenRequest } from './helpers.js';

/** `GET /auth/me`: the session details Medplum's client reads after each login. */

const api = await useTestServer();
const PASSWORD = 'correct horse battery staple';

interface Invited {
  email: string;
  membershipId: string;
  userId: string;
  profile: string;
}

/** A Practitioner user invited into the admin's project, with a password. */
async function invitePractitioner(admin: ProjectClient, extra: Record<string, unknown> = {}): Promise<Invited> {
  const email = `${randomUUID()}@example.org`;
  const res = await sendJson(
    api,
    'POST',
    `/admin/projects/${admin.projectId}/invite`,
    { resourceType: 'Practitioner', firstName: 'Ada', lastName: 'Lovelace', externalId: randomUUID(), email, password: PASSWORD, ...extra },
    bearer(await admin.token()),
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { email, membershipId: res.body.id, userId: res.body.user.reference.split('/')[1], profile: res.body.profile.reference };
}

async function passwordToken(email: string): Promise<string> {
  const res = await tokenRequest(api, { grant_type: 'password', username: email, password: PASSWORD });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.access_token as string;
}

describe('GET /auth/me', () => {
  it('describes a password user: user, profile, project, membership, config and security', async () => {
    const admin = api.newProject();
    const invited = await invitePractitioner(admin);
    const res = await getJson(api, '/auth/me', bearer(await passwordToken(invited.email)));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.user).toEqual({ resourceType: 'User', id: invited.userId, email: invited.email });
    expect(res.body.profile).toMatchObject({
      resourceType: 'Practitioner',
      id: invited.profile.split('/')[1],
      name: [{ given: ['Ada'], family: 'Lovelace' }],
    });
    expect(res.body.project).toMatchObject({ resourceType: 'Project', id: admin.projectId, name: expect.any(String) });
    expect(res.body.membership).toEqual({
      resourceType: 'ProjectMembership',
      id: invited.membershipId,
      user: { reference: `User/${invited.userId}`, display: 'Ada Lovelace' },
      profile: { reference: invited.profile, display: 'Ada Lovelace' },
      admin: false,
    });
    expect(res.body.config.resourceType).toBe('UserConfiguration');
    expect(res.body.config.menu.map((m: { title: string }) => m.title)).toEqual(['Favorites']);
    expect(res.body.security.mfaEnrolled).toBe(false);
    expect(res.body.accessPolicy).toBeUndefined();
  });

  it('lists the user\'s open sessions of the last hour, and leaves out one ended by logout', async () => {
    const admin = api.newProject();
    const invited = await invitePractitioner(admin);
    const first = await passwordToken(invited.email);
    const second = await passwordToken(invited.email);
    const loginOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).login_id as string;
    const logout = await api.raw('/oauth2/logout', { method: 'POST', headers: bearer(first) });
    expect(logout.status).toBe(200);
    const res = await getJson(api, '/auth/me', bearer(second));
    expect(res.status).toBe(200);
    expect(res.body.security.sessions).toEqual([
      expect.objectContaining({ id: loginOf(second), authMethod: 'password', lastUpdated: expect.any(String) }),
    ]);
  });

  it('describes a client-credentials login: the ClientApplication is the profile, without its secret, and there is no user', async () => {
    const admin = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(admin);
    const token = await clientToken(api, clientId, clientSecret);
    const res = await getJson(api, '/auth/me', bearer(token.body.access_token));
    expect(res.status).toBe(200);
    expect(res.body.profile).toMatchObject({ resourceType: 'ClientApplication', id: clientId });
    expect(res.body.membership).toMatchObject({
      user: { reference: `ClientApplication/${clientId}` },
      profile: { reference: `ClientApplication/${clientId}` },
      admin: true,
    });
    expect(res.body.user).toBeUndefined();
    expect(res.body.security).toBeUndefined();
    expect(res.body.config.menu.map((m: { title: string }) => m.title)).toEqual(['Favorites', 'Admin']);
    expect(JSON.stringify(res.body)).not.toContain(clientSecret);
    expect(res.body.profile.secret).toBeUndefined();
  });

  it('never shows a member client its secret, though a project admin reading the ClientApplication sees it', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const read = await admin.get(`/ClientApplication/${member.clientId}`);
    expect(read.body.secret).toBe(member.secret);
    const res = await getJson(api, '/auth/me', bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body.membership.admin).toBe(false);
    expect(JSON.stringify(res.body)).not.toContain(member.secret);
  });

  it('names the super admin project as such', async () => {
    const res = await getJson(api, '/auth/me', bearer(await api.superAdmin.token()));
    expect(res.status).toBe(200);
    expect(res.body.project.superAdmin).toBe(true);
    expect(res.body.config.menu.map((m: { title: string }) => m.title)).toContain('Super Admin');
  });

  it('includes the membership\'s AccessPolicy', async () => {
    const admin = api.newProject();
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'patients only', resource: [{ resourceType: 'Patient' }] });
    expect(policy.status).toBe(201);
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const res = await getJson(api, '/auth/me', bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body.accessPolicy).toMatchObject({ resourceType: 'AccessPolicy', id: policy.body.id, resource: [{ resourceType: 'Patient' }] });
  });

  it('shows the AccessPolicy with its variables replaced for the member, as its access applies them', async () => {
    const admin = api.newProject();
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'own records',
      compartment: { reference: '%profile' },
      resource: [
        { resourceType: 'Practitioner', criteria: 'Practitioner?_id=%profile.id' },
        { resourceType: 'Observation', compartment: { reference: '%patient' }, readonly: true },
      ],
    });
    expect(policy.status, JSON.stringify(policy.body)).toBe(201);
    const invited = await invitePractitioner(admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const res = await getJson(api, '/auth/me', bearer(await passwordToken(invited.email)));
    expect(res.status).toBe(200);
    expect(res.body.accessPolicy).toMatchObject({
      resourceType: 'AccessPolicy',
      id: policy.body.id,
      compartment: { reference: invited.profile },
      resource: [
        { resourceType: 'Practitioner', criteria: `Practitioner?_id=${invited.profile.split('/')[1]}` },
        { resourceType: 'Observation', compartment: { reference: invited.profile }, readonly: true },
      ],
    });
    // The stored policy keeps its variables: one policy serves every member.
    expect((await admin.get(`/AccessPolicy/${policy.body.id}`)).body.compartment).toEqual({ reference: '%profile' });
  });

  it('returns the membership\'s UserConfiguration, with a default menu when it has none', async () => {
    const admin = api.newProject();
    const config = await admin.post('/UserConfiguration', {
      resourceType: 'UserConfiguration',
      name: 'mine',
      option: [{ id: 'theme', valueString: 'dark' }],
    });
    expect(config.status, JSON.stringify(config.body)).toBe(201);
    const invited = await invitePractitioner(admin);
    const membership = await admin.get(`/ProjectMembership/${invited.membershipId}`);
    const updated = await admin.put(`/ProjectMembership/${invited.membershipId}`, {
      ...membership.body,
      userConfiguration: { reference: `UserConfiguration/${config.body.id}` },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    const res = await getJson(api, '/auth/me', bearer(await passwordToken(invited.email)));
    expect(res.status).toBe(200);
    expect(res.body.config).toMatchObject({ resourceType: 'UserConfiguration', id: config.body.id, option: [{ id: 'theme', valueString: 'dark' }] });
    expect(res.body.config.menu[0].title).toBe('Favorites');
  });

  it('answers 401 with WWW-Authenticate without a token, or with a bad one', async () => {
    const none = await getJson(api, '/auth/me');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(none.body.resourceType).toBe('OperationOutcome');
    const bad = await getJson(api, '/auth/me', bearer('not.a.token'));
    expect(bad.status).toBe(401);
    expect(bad.body.issue[0].code).toBe('login');
  });

  it('answers 401 once the token\'s login has ended', async () => {
    const admin = api.newProject();
    const invited = await invitePractitioner(admin);
    const token = await passwordToken(invited.email);
    await api.raw('/oauth2/logout', { method: 'POST', headers: bearer(token) });
    const res = await getJson(api, '/auth/me', bearer(token));
    expect(res.status).toBe(401);
  });
});
