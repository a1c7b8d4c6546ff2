import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_SUPER_ADMIN, useTestServer, type ProjectClient } from '../helpers/server.js';
import { bearer, sendJson, tokenRequest } from './helpers.js';

// A server of its own: throttling is per server, and this file spends the loopback address's budget.
const api = await useTestServer();

describe('login throttling', () => {
  it('slows down repeated failures per account with 429 and Retry-After', async () => {
    const attempt = () => tokenRequest(api, { grant_type: 'password', username: TEST_SUPER_ADMIN.email, password: 'wrong' });
    for (let i = 0; i < 5; i++) expect((await attempt()).status).toBe(400);
    const slowed = await attempt();
    expect(slowed.status).toBe(429);
    expect(Number(slowed.headers.get('retry-after'))).toBeGreaterThan(0);
    // Even the right password waits until the window ends.
    const right = await tokenRequest(api, { grant_type: 'password', username: TEST_SUPER_ADMIN.email, password: TEST_SUPER_ADMIN.password });
    expect(right.status).toBe(429);
    const viaLogin = await sendJson(api, 'POST', '/auth/login', { email: TEST_SUPER_ADMIN.email, password: TEST_SUPER_ADMIN.password });
    expect(viaLogin.status).toBe(429);
    expect(viaLogin.body.issue[0].code).toBe('throttled');
    expect(viaLogin.headers.get('retry-after')).toBeTruthy();
  });

  it('counts failures per User, not per email: a patient account’s failures do not slow down the practitioner with its email', async () => {
    const admin = api.newProject();
    const email = `${randomUUID()}@example.org`;
    await invite(admin, 'Patient', email, 'patient password');
    await invite(admin, 'Practitioner', email, 'practitioner password');
    const asPatient = (password: string) => tokenRequest(api, { grant_type: 'password', username: email, password, project: admin.projectId });
    for (let i = 0; i < 5; i++) expect((await asPatient('wrong')).status).toBe(400);
    expect((await asPatient('patient password')).status).toBe(429);
    const practitioner = await tokenRequest(api, { grant_type: 'password', username: email, password: 'practitioner password' });
    expect(practitioner.status, JSON.stringify(practitioner.body)).toBe(200);
  });

  it('slows down repeated failures per address, whatever the account', async () => {
    let status = 0;
    for (let i = 0; i < 40 && status !== 429; i++) {
      status = (await tokenRequest(api, { grant_type: 'password', username: `user${i}@example.com`, password: 'x' })).status;
    }
    expect(status).toBe(429);
  });
});

/** Invites `email` to the project with a password: a Patient gets a User scoped to it, a Practitioner a server-wide one. */
async function invite(admin: ProjectClient, resourceType: string, email: string, password: string): Promise<void> {
  const body = { resourceType, firstName: 'In', lastName: 'Vited', externalId: randomUUID(), email, password };
  const res = await sendJson(api, 'POST', `/admin/projects/${admin.projectId}/invite`, body, bearer(await admin.token()));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}
