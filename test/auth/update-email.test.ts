import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, startTestServer, useTestServer, type ProjectClient, type TestServer } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, sendJson, tokenRequest } from './helpers.js';

const api = await useTestServer();
const PASSWORD = 'correct horse battery staple';

/** A user invited into the admin's project (Practitioner profile with the email in telecom), with a password. */
async function invitedUser(admin: ProjectClient): Promise<{ userId: string; profile: string; email: string }> {
  const email = `${randomUUID()}@example.org`;
  const res = await sendJson(
    api,
    'POST',
    `/admin/projects/${admin.projectId}/invite`,
    { resourceType: 'Practitioner', firstName: 'Ada', lastName: 'Lovelace', externalId: randomUUID(), email, password: PASSWORD },
    bearer(await admin.token()),
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { userId: res.body.user.reference.split('/')[1], profile: res.body.profile.reference, email };
}

const signIn = (email: string) => tokenRequest(api, { grant_type: 'password', username: email, password: PASSWORD });

const parameters = (email: string, flags: Record<string, boolean> = {}) => ({
  resourceType: 'Parameters',
  parameter: [{ name: 'email', valueString: email }, ...Object.entries(flags).map(([name, valueBoolean]) => ({ name, valueBoolean }))],
});

const updateEmail = (token: string, userId: string, body: unknown) =>
  sendJson(api, 'POST', `/fhir/R4/User/${userId}/$update-email`, body, bearer(token));

describe('User/$update-email', () => {
  it('changes the email a project admin gives: the user signs in with the new one only', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const email = `${randomUUID()}@example.org`;
    const res = await updateEmail(await admin.token(), user.userId, parameters(email));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'User', id: user.userId, email, emailVerified: false });
    expect((await signIn(email)).status).toBe(200);
    expect((await signIn(user.email)).status).toBe(400);
    const profile = await admin.get(`/${user.profile}`);
    expect(profile.body.telecom).toEqual([{ system: 'email', value: user.email }]);
  });

  it('with updateProfileTelecom adds the new email to the profile and marks the old one use=old', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const email = `${randomUUID()}@example.org`;
    const res = await updateEmail(await admin.token(), user.userId, parameters(email, { updateProfileTelecom: true, skipEmailVerification: true }));
    expect(res.status).toBe(200);
    const profile = await admin.get(`/${user.profile}`);
    expect(profile.body.telecom).toEqual([
      { system: 'email', value: user.email, use: 'old' },
      { system: 'email', value: email, use: 'work' },
    ]);
  });

  it('lets the user change its own email', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const token = (await signIn(user.email)).body.access_token as string;
    const email = `${randomUUID()}@example.org`;
    const res = await updateEmail(token, user.userId, parameters(email));
    expect(res.status).toBe(200);
    expect(res.body.email).toBe(email);
  });

  it('with signOutEverywhere revokes the user’s logins: its access and refresh tokens stop working at once', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const login = (await signIn(user.email)).body;
    expect((await getJson(api, '/fhir/R4/Patient', bearer(login.access_token))).status).toBe(200);
    const res = await updateEmail(await admin.token(), user.userId, parameters(`${randomUUID()}@example.org`, { signOutEverywhere: true }));
    expect(res.status).toBe(200);
    const after = await getJson(api, '/fhir/R4/Patient', bearer(login.access_token));
    expect(after.status).toBe(401);
    expect(after.body.issue[0].code).toBe('login');
    expect((await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: login.refresh_token })).status).toBe(400);
    // The admin's own token is not the user's: it keeps working.
    expect((await admin.get('/Patient')).status).toBe(200);
  });

  it('keeps the tokens of the user without signOutEverywhere', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const login = (await signIn(user.email)).body;
    expect((await updateEmail(await admin.token(), user.userId, parameters(`${randomUUID()}@example.org`))).status).toBe(200);
    expect((await getJson(api, '/fhir/R4/Patient', bearer(login.access_token))).status).toBe(200);
  });

  it('is 409 when another user has the email (in any project, any case), and changes nothing', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const other = await invitedUser(api.newProject());
    const res = await updateEmail(await admin.token(), user.userId, parameters(other.email.toUpperCase(), { updateProfileTelecom: true }));
    expect(res.status).toBe(409);
    expect(res.body.issue[0]).toMatchObject({ code: 'conflict', expression: ['User.email'] });
    expect((await admin.get(`/User/${user.userId}`)).body.email).toBe(user.email);
    expect((await admin.get(`/${user.profile}`)).body.telecom).toEqual([{ system: 'email', value: user.email }]);
  });

  it('is 400 without an email or with a malformed one', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const token = await admin.token();
    const missing = await updateEmail(token, user.userId, { resourceType: 'Parameters', parameter: [{ name: 'updateProfileTelecom', valueBoolean: true }] });
    expect(missing.status).toBe(400);
    expect(missing.body.issue[0].code).toBe('invalid');
    const malformed = await updateEmail(token, user.userId, parameters('not an email'));
    expect(malformed.status).toBe(400);
    expect(malformed.body.issue[0].expression).toEqual(['Parameters.parameter']);
  });

  it('is 403 for a member who is not an admin (for another user)', async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const member = await addMemberClient(api, admin);
    const res = await updateEmail(member.token, user.userId, parameters(`${randomUUID()}@example.org`));
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it("is 403 for a project admin when the user is a member of another project too, and changes nothing", async () => {
    const admin = api.newProject();
    const user = await invitedUser(admin);
    const other = api.newProject();
    const invited = await sendJson(
      api,
      'POST',
      `/admin/projects/${other.projectId}/invite`,
      { resourceType: 'Practitioner', firstName: 'Ada', lastName: 'Lovelace', externalId: randomUUID(), email: user.email },
      bearer(await other.token()),
    );
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body.user.reference).toBe(`User/${user.userId}`);
    const res = await updateEmail(await admin.token(), user.userId, parameters(`${randomUUID()}@example.org`));
    expect(res.status).toBe(403);
    expect(res.body.issue[0].expression).toEqual(['User.email']);
    expect((await admin.get(`/User/${user.userId}`)).body.email).toBe(user.email);
  });

  it("is 404 for an unknown user and for another project's user", async () => {
    const admin = api.newProject();
    const other = await invitedUser(api.newProject());
    const token = await admin.token();
    expect((await updateEmail(token, randomUUID(), parameters(`${randomUUID()}@example.org`))).status).toBe(404);
    const res = await updateEmail(token, other.userId, parameters(`${randomUUID()}@example.org`));
    expect(res.status).toBe(404);
    expect((await signIn(other.email)).status).toBe(200);
  });

  it('lets a super admin change any user’s email', async () => {
    const user = await invitedUser(api.newProject());
    const email = `${randomUUID()}@example.org`;
    const res = await updateEmail(await api.superAdmin.token(), user.userId, parameters(email));
    expect(res.status).toBe(200);
    expect((await signIn(email)).status).toBe(200);
  });
});

/** On PostgreSQL the user's tokens may be in use on another server: it refuses them too once the Logins are revoked. */
describe.skipIf(!process.env.DATABASE_URL)('signOutEverywhere with two servers (PostgreSQL)', async () => {
  // One deployment: the servers hear each other's cache notices.
  const namespace = `test_ops_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const first = await useTestServer({ CACHE_NAMESPACE: namespace });
  const second: TestServer = await startTestServer({ CACHE_NAMESPACE: namespace });
  afterAll(() => second.server.close());

  it('makes the other server refuse the user’s access token, which it had verified and remembered', async () => {
    const admin = first.newProject();
    const email = `${randomUUID()}@example.org`;
    const invited = await sendJson(
      first,
      'POST',
      `/admin/projects/${admin.projectId}/invite`,
      { resourceType: 'Practitioner', firstName: 'A', lastName: 'B', externalId: randomUUID(), email, password: PASSWORD },
      bearer(await admin.token()),
    );
    const userId = invited.body.user.reference.split('/')[1];
    const login = (await tokenRequest(first, { grant_type: 'password', username: email, password: PASSWORD })).body;
    expect((await getJson(second, '/fhir/R4/Patient', bearer(login.access_token))).status).toBe(200);
    const res = await sendJson(first, 'POST', `/fhir/R4/User/${userId}/$update-email`, parameters(`${randomUUID()}@example.org`, { signOutEverywhere: true }), bearer(await admin.token()));
    expect(res.status).toBe(200);
    await eventually(async () => (await getJson(second, '/fhir/R4/Patient', bearer(login.access_token))).status, 401);
  });
});
