import { randomUUID } from 'node:crypto';
import { MedplumClient } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import type { Resource } from '../helpers/client-shapes.js';
import { useMedplumSessionStorage } from '../helpers/medplum-session.js';
import { useTestServer } from '../helpers/server.js';
import { bearer, getJson, sendJson, tokenRequest } from './helpers.js';

/**
 * Self sign-up (`/auth/newuser`, `/auth/newproject`) as MedplumClient's startNewUser and
 * startNewProject use it: off by default, on with ALLOW_SIGN_UP=true.
 */

const closed = await useTestServer();
const open = await useTestServer({ ALLOW_SIGN_UP: 'true' });
const PASSWORD = 'correct horse battery staple';

useMedplumSessionStorage();

function newUserBody(email = `${randomUUID()}@example.org`): Record<string, string> {
  return { firstName: 'Ada', lastName: 'Lovelace', email, password: PASSWORD, recaptchaToken: 'unused' };
}

describe('sign-up, off by default', () => {
  it('POST /auth/newuser answers 404 with an OperationOutcome naming the setting', async () => {
    const res = await sendJson(closed, 'POST', '/auth/newuser', newUserBody());
    expect(res.status).toBe(404);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(JSON.stringify(res.body.issue[0])).toContain('ALLOW_SIGN_UP');
  });

  it('POST /auth/newproject answers 404 too', async () => {
    const res = await sendJson(closed, 'POST', '/auth/newproject', { login: 'x', projectName: 'P' });
    expect(res.status).toBe(404);
  });
});

describe('sign-up with MedplumClient', () => {
  it('startNewUser then startNewProject give a code that processCode turns into an admin session of the new project', async () => {
    const medplum = new MedplumClient({ baseUrl: `${open.url}/`, fetch, cacheTime: 0 });
    const email = `${randomUUID()}@example.org`;
    const user = await medplum.startNewUser({ firstName: 'Ada', lastName: 'Lovelace', email, password: PASSWORD, recaptchaToken: 'unused' });
    expect(user.login).toEqual(expect.any(String));
    const project = await medplum.startNewProject({ login: user.login, projectName: 'Analytical Engines' });
    const profile: Resource = await medplum.processCode(project.code!);
    expect(profile).toMatchObject({ resourceType: 'Practitioner', name: [{ given: ['Ada'], family: 'Lovelace' }] });
    expect(medplum.getProject()).toMatchObject({ resourceType: 'Project', name: 'Analytical Engines' });
    expect(medplum.isProjectAdmin()).toBe(true);
    const created = await medplum.createResource({ resourceType: 'Patient', name: [{ family: 'Babbage' }] });
    expect(created.id).toEqual(expect.any(String));
  });

  it('the new user can sign in again with the password (stored hashed as invited users are)', async () => {
    const medplum = new MedplumClient({ baseUrl: `${open.url}/`, fetch, cacheTime: 0 });
    const body = newUserBody();
    const user = await medplum.startNewUser(body as never);
    await medplum.startNewProject({ login: user.login, projectName: 'Second' });
    const res = await tokenRequest(open, { grant_type: 'password', username: body.email, password: PASSWORD });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const me = await getJson(open, '/auth/me', bearer(res.body.access_token as string));
    expect(me.body.project.name).toBe('Second');
    expect(me.body.membership.admin).toBe(true);
  });
});

describe('sign-up refusals', () => {
  it('an email already used answers 409 (to anyone without its password: test/auth/sign-up-patient.test.ts)', async () => {
    const body = newUserBody();
    expect((await sendJson(open, 'POST', '/auth/newuser', body)).status).toBe(200);
    const again = await sendJson(open, 'POST', '/auth/newuser', { ...body, firstName: 'Someone', password: 'not the same password' });
    expect(again.status).toBe(409);
    expect(again.body.resourceType).toBe('OperationOutcome');
  });

  it('a missing field answers 400 naming it', async () => {
    const { lastName: _dropped, ...body } = newUserBody();
    const res = await sendJson(open, 'POST', '/auth/newuser', body);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['lastName']);
  });

  it('a short password answers 400', async () => {
    const res = await sendJson(open, 'POST', '/auth/newuser', { ...newUserBody(), password: 'short' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['password']);
  });

  it('a login that /auth/newuser did not answer is refused with 400', async () => {
    const res = await sendJson(open, 'POST', '/auth/newproject', { login: 'not-a-partial-login', projectName: 'P' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['login']);
  });

  it('an access token is not accepted as the partial login', async () => {
    const project = open.newProject();
    const res = await sendJson(open, 'POST', '/auth/newproject', { login: await project.token(), projectName: 'P' });
    expect(res.status).toBe(400);
  });

  it('the partial login is not accepted as a bearer token', async () => {
    const start = await sendJson(open, 'POST', '/auth/newuser', newUserBody());
    const res = await getJson(open, '/auth/me', bearer(start.body.login as string));
    expect(res.status).toBe(401);
  });
});
