import { describe, expect, it } from 'vitest';
import { TEST_SUPER_ADMIN, useTestServer } from '../helpers/server.js';
import { clientToken, sendJson, tokenRequest, type JsonResponse } from './helpers.js';

/**
 * What the token endpoint refuses before any work (RFC 6749: a parameter given twice, two ways of
 * authenticating the client), and fields it refuses (NUL, over-long) with OAuth's 400
 * `invalid_request`, so that no bad field reaches the Logins written together with other
 * projects' (docs/auth.md#token-requests).
 */

const api = await useTestServer();

async function rawForm(form: string, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const res = await api.raw('/oauth2/token', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers }, body: form });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

function expectInvalidRequest(res: JsonResponse, mentions: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error).toBe('invalid_request');
  expect(res.body.error_description).toContain(mentions);
}

describe('token request strictness (RFC 6749)', () => {
  it('refuses grant_type given twice', async () => {
    const { clientId, clientSecret } = await api.credentialsOf(api.newProject());
    const form = `grant_type=client_credentials&grant_type=client_credentials&client_id=${clientId}&client_secret=${clientSecret}`;
    expectInvalidRequest(await rawForm(form), 'grant_type');
  });

  it('refuses client credentials in both a Basic header and the body', async () => {
    const { clientId, clientSecret } = await api.credentialsOf(api.newProject());
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    const form = `grant_type=client_credentials&client_id=${clientId}&client_secret=${clientSecret}`;
    expectInvalidRequest(await rawForm(form, { Authorization: basic }), 'Basic');
  });
});

describe('token request fields', () => {
  it('refuses NUL in scope with 400 invalid_request', async () => {
    const { clientId, clientSecret } = await api.credentialsOf(api.newProject());
    const res = await tokenRequest(api, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: '\0' });
    expectInvalidRequest(res, 'scope');
  });

  it('refuses a scope longer than the field limit with 400 invalid_request', async () => {
    const { clientId, clientSecret } = await api.credentialsOf(api.newProject());
    const res = await tokenRequest(api, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: 'x'.repeat(20_000) });
    expectInvalidRequest(res, 'scope');
  });

  it('a request with NUL in scope does not fail the concurrent token requests of other projects', async () => {
    const good = await Promise.all(Array.from({ length: 6 }, () => api.credentialsOf(api.newProject())));
    const bad = good[0];
    const [refused, ...others] = await Promise.all([
      tokenRequest(api, { grant_type: 'client_credentials', client_id: bad.clientId, client_secret: bad.clientSecret, scope: '\0' }),
      ...good.slice(1).map(({ clientId, clientSecret }) => clientToken(api, clientId, clientSecret)),
    ]);
    expect(refused.status).toBe(400);
    expect(others.map((res) => res.status)).toEqual(others.map(() => 200));
  });

  it('refuses NUL in the username of a password grant with 400 invalid_request', async () => {
    const res = await tokenRequest(api, { grant_type: 'password', username: `${TEST_SUPER_ADMIN.email}\0`, password: TEST_SUPER_ADMIN.password });
    expectInvalidRequest(res, 'username');
  });

  it('refuses NUL in the email of POST /auth/login with 400', async () => {
    const res = await sendJson(api, 'POST', '/auth/login', { email: `a\0@example.com`, password: 'secret' });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.issue[0].details.text).toContain('email');
  });
});
