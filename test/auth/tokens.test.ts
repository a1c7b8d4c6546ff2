import { createLocalJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { patientBody, TEST_SUPER_ADMIN, useTestServer } from '../helpers/server.js';
import { addMemberClient, bearer, clientToken, getJson, tokenRequest } from './helpers.js';

const api = await useTestServer();
const issuer = api.server.services.config.baseUrl;

describe('POST /oauth2/token', () => {
  it('issues an ES256 access token by client credentials in the body, verifiable with the JWKS', async () => {
    const client = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(client);
    const res = await clientToken(api, clientId, clientSecret);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, project: { reference: `Project/${client.projectId}` } });
    expect(res.body.profile.reference).toBe(`ClientApplication/${clientId}`);
    expect(res.body.refresh_token).toBeUndefined();
    const jwks = await getJson(api, '/.well-known/jwks.json');
    expect(jwks.body.keys).toHaveLength(1);
    expect(jwks.body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwks.body.keys[0].d).toBeUndefined();
    const { payload, protectedHeader } = await jwtVerify(res.body.access_token, createLocalJWKSet(jwks.body), { issuer });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload).toMatchObject({ iss: issuer, sub: clientId, project: client.projectId, client_id: clientId, profile: `ClientApplication/${clientId}` });
    expect(typeof payload.login_id).toBe('string');
    expect(typeof payload.scope).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(3600);
  });

  it('accepts client credentials by HTTP Basic', async () => {
    const { clientId, clientSecret } = await api.credentialsOf(api.newProject());
    const basic = Buffer.from(`${clientId}:${clientSecret}`).toString('base64');
    const res = await tokenRequest(api, { grant_type: 'client_credentials' }, { Authorization: `Basic ${basic}` });
    expect(res.status).toBe(200);
    const read = await getJson(api, '/fhir/R4/Patient/none', bearer(res.body.access_token));
    expect(read.status).toBe(404);
  });

  it('gives a client credentials token the client application\'s defaultScope when no scope is asked', async () => {
    const admin = api.newProject();
    const { clientId, secret } = await addMemberClient(api, admin);
    const client = await admin.get(`/ClientApplication/${clientId}`);
    const updated = await admin.put(`/ClientApplication/${clientId}`, { ...client.body, defaultScope: ['system/Patient.read', 'openid'] });
    expect(updated.status).toBe(200);
    const res = await clientToken(api, clientId, secret);
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('system/Patient.read openid');
  });

  it('refuses a wrong secret or unknown client with invalid_client', async () => {
    const { clientId } = await api.credentialsOf(api.newProject());
    const wrong = await clientToken(api, clientId, 'not-the-secret');
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    const basic = Buffer.from(`${clientId}:nope`).toString('base64');
    const viaBasic = await tokenRequest(api, { grant_type: 'client_credentials' }, { Authorization: `Basic ${basic}` });
    expect(viaBasic.status).toBe(401);
    expect(viaBasic.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await clientToken(api, 'no-such-client', 'x')).status).toBe(401);
  });

  it('applies a change to a client to its next token: new secret, switched off, membership inactive', async () => {
    const client = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(client);
    // A first token, so that whatever the server keeps about the client is warm.
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(200);
    const current = await client.get(`/ClientApplication/${clientId}`);
    const { secret: _secret, ...application } = current.body;
    expect((await client.put(`/ClientApplication/${clientId}`, { ...application, secret: 'rotated-secret' })).status).toBe(200);
    expect((await clientToken(api, clientId, clientSecret)).status).toBe(401);
    expect((await clientToken(api, clientId, 'rotated-secret')).status).toBe(200);
    const superAdmin = bearer(await api.superAdmin.token());
    const memberships = await getJson(api, `/fhir/R4/ProjectMembership?profile=ClientApplication/${clientId}`, superAdmin);
    const [membership] = memberships.body.entry.map((e: any) => e.resource);
    const inactive = await api.raw(`/fhir/R4/ProjectMembership/${membership.id}`, {
      method: 'PUT',
      headers: { ...superAdmin, 'Content-Type': 'application/fhir+json' },
      body: JSON.stringify({ ...membership, active: false }),
    });
    expect(inactive.status).toBe(200);
    expect((await clientToken(api, clientId, 'rotated-secret')).body.error).toBe('invalid_client');
    const off = await api.raw(`/fhir/R4/ClientApplication/${clientId}`, {
      method: 'PUT',
      headers: { ...superAdmin, 'Content-Type': 'application/fhir+json' },
      body: JSON.stringify({ ...application, status: 'off', secret: 'rotated-secret' }),
    });
    expect(off.status).toBe(200);
    const refused = await clientToken(api, clientId, 'rotated-secret');
    expect(refused.status).toBe(401);
    expect(refused.body.error_description).toMatch(/switched off/);
  });

  it('gives each of many concurrent client credentials tokens its own stored Login', async () => {
    const client = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(client);
    const results = await Promise.all(Array.from({ length: 20 }, () => clientToken(api, clientId, clientSecret)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const loginIds = results.map((r) => decodeJwt(r.body.access_token).login_id as string);
    expect(new Set(loginIds).size).toBe(20);
    const superAdmin = bearer(await api.superAdmin.token());
    for (const [index, loginId] of loginIds.entries()) {
      const login = await getJson(api, `/fhir/R4/Login/${loginId}`, superAdmin);
      expect(login.status).toBe(200);
      expect(login.body).toMatchObject({ resourceType: 'Login', authMethod: 'client', user: { reference: `ClientApplication/${clientId}` }, meta: { project: client.projectId } });
      expect((await getJson(api, '/fhir/R4/Patient/none', bearer(results[index].body.access_token))).status).toBe(404);
    }
    // Indexed like any write: search finds every one.
    const found = await getJson(api, `/fhir/R4/Login?user=ClientApplication/${clientId}&_count=100`, superAdmin);
    expect(found.body.entry.map((e: any) => e.resource.id)).toEqual(expect.arrayContaining(loginIds));
    // The history holds their first versions.
    const history = await getJson(api, `/fhir/R4/Login/${loginIds[0]}/_history`, superAdmin);
    expect(history.body.entry).toHaveLength(1);
  });

  it('answers anything but a form with 400 and an OAuth error', async () => {
    const res = await api.raw('/oauth2/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('form-encoded') });
    const unsupported = await tokenRequest(api, { grant_type: 'implicit' });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error).toBe('unsupported_grant_type');
    expect((await tokenRequest(api, {})).body.error).toBe('invalid_request');
  });

  it('issues tokens by password and rotates the refresh token on use', async () => {
    const res = await tokenRequest(api, { grant_type: 'password', username: TEST_SUPER_ADMIN.email, password: TEST_SUPER_ADMIN.password });
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toMatch(/\./);
    expect(res.body.profile.reference).toMatch(/^Practitioner\//);
    const first = res.body.refresh_token as string;
    const rotated = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: first });
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).not.toBe(first);
    expect(decodeJwt(rotated.body.access_token).login_id).toBe(decodeJwt(res.body.access_token).login_id);
    // The old refresh token is spent: reusing it ends the login, so the new one stops working too.
    const reused = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: first });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    const after = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token });
    expect(after.status).toBe(400);
    const garbage = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: 'nonsense' });
    expect(garbage.body.error).toBe('invalid_grant');
  });

  it('refuses a wrong password with invalid_grant', async () => {
    const res = await tokenRequest(api, { grant_type: 'password', username: 'nobody@example.com', password: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });
});

describe('bearer tokens', () => {
  const expectLogin401 = async (headers: Record<string, string>) => {
    const res = await getJson(api, '/fhir/R4/Patient/x', headers);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="Flint"/);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('login');
    return res;
  };

  it('refuses a request without a token', async () => {
    const res = await expectLogin401({});
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="Flint"');
    expect((await api.raw('/fhir/R4/Patient', { method: 'POST', body: '{}' })).status).toBe(401);
  });

  it('refuses malformed Authorization headers', async () => {
    for (const header of ['Bearer', 'Bearer  two spaces', 'Bearer a b', 'Token abc', 'Bearer not-a-jwt']) {
      const res = await expectLogin401({ Authorization: header });
      expect(res.headers.get('www-authenticate')).toContain('invalid_token');
    }
    // Basic is client credentials (test/auth/basic-auth.test.ts): refused with a Basic challenge.
    const basic = await getJson(api, '/fhir/R4/Patient/x', { Authorization: 'Basic abc' });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic realm="Flint"/);
  });

  it('refuses expired, wrongly signed, alg none and foreign-issuer tokens', async () => {
    const auth = api.server.services.auth;
    const good = await api.newProject().token();
    const claims = decodeJwt(good);
    const { iss: _i, exp: _e, iat: _t, jti: _j, ...rest } = claims;
    const expired = await auth.signer.sign(rest as never, -60);
    await expectLogin401(bearer(expired));

    const { privateKey } = await generateKeyPair('ES256');
    const kid = auth.keys.kid;
    const forged = await new SignJWT(rest).setProtectedHeader({ alg: 'ES256', kid }).setIssuer(issuer).setExpirationTime('1h').sign(privateKey);
    await expectLogin401(bearer(forged));

    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ ...claims }),
    ).toString('base64url')}.`;
    await expectLogin401(bearer(none));

    const hs = await new SignJWT(rest).setProtectedHeader({ alg: 'HS256', kid }).setIssuer(issuer).setExpirationTime('1h')
      .sign(new TextEncoder().encode(JSON.stringify(await exportJWK((await generateKeyPair('ES256')).publicKey))));
    await expectLogin401(bearer(hs));

    const foreign = await new SignJWT(rest)
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer('https://elsewhere.example/')
      .setExpirationTime('1h')
      .sign(auth.keys.privateKey);
    const res = await expectLogin401(bearer(foreign));
    expect(res.body.issue[0].details.text).toMatch(/another server/);

    const tampered = good.replace(/\.([^.]+)\./, (_m, payload: string) => {
      const body = JSON.parse(Buffer.from(payload, 'base64url').toString());
      return `.${Buffer.from(JSON.stringify({ ...body, project: 'other' })).toString('base64url')}.`;
    });
    await expectLogin401(bearer(tampered));
  });

  it('guards GraphQL with the same bearer check', async () => {
    const res = await api.raw('/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ query: '{ health { ok } }' }) });
    expect(res.status).toBe(401);
  });

  it('keeps metadata, health and well-known documents public', async () => {
    for (const path of ['/fhir/R4/metadata', '/healthcheck', '/.well-known/jwks.json', '/.well-known/openid-configuration', '/.well-known/smart-configuration']) {
      expect((await api.raw(path)).status, path).toBe(200);
    }
  });
});

describe('project isolation', () => {
  it('hides each project from the other, in both directions, and shows both to the super admin', async () => {
    const a = api.newProject();
    const b = api.newProject();
    const pa = await a.post('/Patient', patientBody());
    const pb = await b.post('/Patient', patientBody());
    expect(pa.status).toBe(201);
    for (const [reader, created] of [[b, pa], [a, pb]] as const) {
      const id = created.body.id;
      expect((await reader.get(`/Patient/${id}`)).status).toBe(404);
      expect((await reader.get(`/Patient/${id}/_history`)).status).toBe(404);
      expect((await reader.get(`/Patient/${id}/_history/${created.body.meta.versionId}`)).status).toBe(404);
      // Ids are server-wide: a PUT of the id is refused as in use (409), telling nothing more.
      expect((await reader.put(`/Patient/${id}`, { ...patientBody(), id })).status).toBe(409);
      expect((await reader.patch(`/Patient/${id}`, [{ op: 'replace', path: '/gender', value: 'other' }])).status).toBe(404);
      expect((await reader.delete(`/Patient/${id}`)).status).toBe(404);
      const history = await reader.get('/Patient/_history?_count=1000');
      expect(history.body.entry?.map((e: { resource?: { id: string } }) => e.resource?.id) ?? []).not.toContain(id);
    }
    // Nothing changed for the owners.
    expect((await a.get(`/Patient/${pa.body.id}`)).body).toEqual(pa.body);
    expect((await b.get(`/Patient/${pb.body.id}`)).body).toEqual(pb.body);
    expect(pa.body.meta.project).toBe(a.projectId);
    // The super admin sees every project.
    expect((await api.superAdmin.get(`/Patient/${pa.body.id}`)).status).toBe(200);
    expect((await api.superAdmin.get(`/Patient/${pb.body.id}`)).status).toBe(200);
  });

  it('scopes GraphQL to the token project', async () => {
    const a = api.newProject();
    const created = await a.post('/Patient', patientBody());
    const query = JSON.stringify({ query: `{ resource(resourceType: "Patient", id: "${created.body.id}") }` });
    const other = await api.raw('/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json', ...(await api.newProject().authHeaders()) }, body: query });
    expect((await other.json()).data.resource).toBeNull();
    const mine = await api.raw('/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json', ...(await a.authHeaders()) }, body: query });
    expect((await mine.json()).data.resource.id).toBe(created.body.id);
  });
});
