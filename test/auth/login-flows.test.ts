import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { TEST_SUPER_ADMIN, useTestServer } from '../helpers/server.js';
import { bearer, getJson, sendJson, tokenRequest } from './helpers.js';

const api = await useTestServer();

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

async function superAdminPasswordToken() {
  const res = await tokenRequest(api, { grant_type: 'password', username: TEST_SUPER_ADMIN.email, password: TEST_SUPER_ADMIN.password });
  expect(res.status).toBe(200);
  return res.body;
}

describe('authorization code with PKCE', () => {
  it('exchanges a code from POST /auth/login once, with the right verifier only', async () => {
    const { verifier, challenge } = pkce();
    const login = await sendJson(api, 'POST', '/auth/login', {
      email: TEST_SUPER_ADMIN.email,
      password: TEST_SUPER_ADMIN.password,
      codeChallenge: challenge,
      codeChallengeMethod: 'S256',
    });
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ login: expect.any(String), code: expect.any(String) });
    const wrong = await tokenRequest(api, { grant_type: 'authorization_code', code: login.body.code, code_verifier: 'x'.repeat(43) });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    const res = await tokenRequest(api, { grant_type: 'authorization_code', code: login.body.code, code_verifier: verifier });
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toBeDefined();
    expect(decodeJwt(res.body.access_token).login_id).toBe(login.body.login);
    const again = await tokenRequest(api, { grant_type: 'authorization_code', code: login.body.code, code_verifier: verifier });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  });

  it('refuses a wrong password at /auth/login with 401 login', async () => {
    const res = await sendJson(api, 'POST', '/auth/login', { email: 'nobody@example.com', password: 'x' });
    expect(res.status).toBe(401);
    expect(res.body.issue[0].code).toBe('login');
  });

  it('refuses a /auth/login body that is JSON but no object with 400 invalid', async () => {
    for (const body of [null, ['a@example.com', 'x'], 'a@example.com']) {
      const res = await sendJson(api, 'POST', '/auth/login', body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(res.body.issue[0].code).toBe('invalid');
      expect(res.body.issue[0].details.text).toBe('Send a JSON object with email and password');
    }
  });

  it('serves /oauth2/authorize: a sign-in form, then a redirect with code and state', async () => {
    const admin = api.newProject();
    const app = await admin.post('/ClientApplication', {
      resourceType: 'ClientApplication',
      name: 'browser app',
      redirectUri: 'https://app.example/callback',
    });
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.body.id,
      redirect_uri: 'https://app.example/callback',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'xyz',
      scope: 'openid',
    });
    const form = await api.raw(`/oauth2/authorize?${query}`);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await form.text()).toContain('name="password"');
    const badRedirect = await api.raw(`/oauth2/authorize?${new URLSearchParams({ ...Object.fromEntries(query), redirect_uri: 'https://evil.example/' })}`);
    expect(badRedirect.status).toBe(400);
    const post = await api.raw('/oauth2/authorize', {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...Object.fromEntries(query), email: TEST_SUPER_ADMIN.email, password: TEST_SUPER_ADMIN.password }),
    });
    expect(post.status).toBe(302);
    const location = new URL(post.headers.get('location')!);
    expect(location.origin + location.pathname).toBe('https://app.example/callback');
    expect(location.searchParams.get('state')).toBe('xyz');
    const res = await tokenRequest(api, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      code_verifier: verifier,
      client_id: app.body.id,
    });
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.access_token).client_id).toBe(app.body.id);
  });
});

describe('userinfo and logout', () => {
  it('returns the caller claims for our own token', async () => {
    const tokens = await superAdminPasswordToken();
    const res = await getJson(api, '/oauth2/userinfo', bearer(tokens.access_token));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sub: decodeJwt(tokens.access_token).sub, email: TEST_SUPER_ADMIN.email, name: 'Super Admin' });
    expect(res.body.fhirUser).toMatch(/\/fhir\/R4\/Practitioner\//);
    expect((await getJson(api, '/oauth2/userinfo')).status).toBe(401);
  });

  it('revokes the login on /oauth2/logout: its access and refresh tokens stop working', async () => {
    const tokens = await superAdminPasswordToken();
    expect((await getJson(api, '/fhir/R4/Patient/none', bearer(tokens.access_token))).status).toBe(404);
    const out = await api.raw('/oauth2/logout', { method: 'POST', headers: bearer(tokens.access_token) });
    expect(out.status).toBe(200);
    expect((await getJson(api, '/fhir/R4/Patient/none', bearer(tokens.access_token))).status).toBe(401);
    const refresh = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    expect(refresh.status).toBe(400);
  });
});

describe('discovery documents', () => {
  it('describes the endpoints', async () => {
    const base = api.server.services.config.baseUrl;
    const oidc = await getJson(api, '/.well-known/openid-configuration');
    expect(oidc.body).toMatchObject({
      issuer: base,
      token_endpoint: `${base}oauth2/token`,
      authorization_endpoint: `${base}oauth2/authorize`,
      userinfo_endpoint: `${base}oauth2/userinfo`,
      jwks_uri: `${base}.well-known/jwks.json`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(oidc.body.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials', 'password', 'authorization_code', 'refresh_token']));
    const smart = await getJson(api, '/.well-known/smart-configuration');
    expect(smart.body).toMatchObject({ token_endpoint: `${base}oauth2/token`, code_challenge_methods_supported: ['S256'] });
  });
});

describe('CapabilityStatement security', () => {
  it('names the OAuth endpoints', async () => {
    const res = await getJson(api, '/fhir/R4/metadata');
    const security = res.body.rest[0].security;
    expect(security.service[0].coding[0].code).toBe('SMART-on-FHIR');
    const uris = security.extension[0].extension.map((e: { url: string }) => e.url);
    expect(uris).toEqual(expect.arrayContaining(['token', 'authorize']));
  });
});
