import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { decodeJwt, SignJWT, type JWK } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { patientBody, testEnv, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, tokenRequest } from './helpers.js';
import { ASSERTION_TYPE, assertionGrantOn, expectInvalidClient, signAssertion, signingKey, type AssertionOptions, type SigningKey } from './assertion-helpers.js';

const api = await useTestServer();
const tokenUrl = `${api.server.services.config.baseUrl}oauth2/token`;
/** A client's JWK Set host: serves whatever keys the test puts in `served`. */
let jwksServer: Server;
let jwksUrl: string;
const served = new Map<string, JWK[]>();

beforeAll(async () => {
  jwksServer = createServer((req, res) => {
    const keys = served.get(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
    if (!keys) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => jwksServer.close(() => resolve())));

/** A backend-service ClientApplication (jwksUri, no use of its secret) with a membership in the project. */
async function backendClient(admin: ProjectClient, keys: JWK[], withJwksUri = true): Promise<string> {
  const path = randomUUID();
  served.set(path, keys);
  const client = { name: 'backend service', ...(withJwksUri ? { jwksUri: `${jwksUrl}${path}` } : {}) };
  const { clientId } = await addMemberClient(api, admin, { client });
  return clientId;
}

const assertion = (clientId: string, key: SigningKey, options: AssertionOptions = {}) => signAssertion(tokenUrl, clientId, key, options);
const assertionGrant = (clientAssertion: string, extra: Record<string, string> = {}) => assertionGrantOn(api, clientAssertion, extra);

describe('SMART Backend Services: client_credentials with a JWT client assertion', () => {
  it('issues a token for an RS384 assertion signed by a key of the client\'s jwksUri', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    await admin.post('/Patient', patientBody());
    const res = await assertionGrant(await assertion(clientId, key));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ token_type: 'Bearer', scope: 'system/*.read', project: { reference: `Project/${admin.projectId}` } });
    expect(res.body.refresh_token).toBeUndefined();
    expect(decodeJwt(res.body.access_token)).toMatchObject({ client_id: clientId, sub: clientId });
    const search = await getJson(api, '/fhir/R4/Patient', bearer(res.body.access_token));
    expect(search.status).toBe(200);
    expect(search.body.entry).toHaveLength(1);
  });

  it('accepts ES384 assertions', async () => {
    const admin = api.newProject();
    const key = await signingKey('ES384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const res = await assertionGrant(await assertion(clientId, key));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it('refuses a replayed assertion (same jti)', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const signed = await assertion(clientId, key);
    expect((await assertionGrant(signed)).status).toBe(200);
    expectInvalidClient(await assertionGrant(signed), /already used/);
    // A new assertion with the same jti is a replay too.
    const jti = decodeJwt(signed).jti!;
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { jti })), /already used/);
  });

  it('refuses RS256 assertions, even signed by a key of the client\'s JWK Set', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS256');
    const clientId = await backendClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key)), /RS256 are not accepted.*RS384 or ES384/);
  });

  it('refuses HS256 assertions (a shared secret is no client key)', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const now = Math.floor(Date.now() / 1000);
    const hmac = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: key.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(tokenUrl)
      .setJti(randomUUID())
      .setExpirationTime(now + 60)
      .sign(new TextEncoder().encode('a shared secret that is long enough'));
    expectInvalidClient(await assertionGrant(hmac), /HS256 are not accepted/);
  });

  it('refuses an assertion for another audience', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { aud: 'https://elsewhere.example/token' })), /aud must be the token endpoint/);
  });

  it('refuses an expired assertion, and one that expires more than 5 minutes ahead', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { expiresIn: -120 })), /expired/);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { expiresIn: 600 })), /at most 5 minutes/);
  });

  it('refuses an assertion whose sub differs from iss', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { sub: randomUUID() })), /sub equal to iss/);
  });

  it('refuses an unknown kid, and accepts a key added to the JWK Set later (fetched again)', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    expect((await assertionGrant(await assertion(clientId, key))).status).toBe(200);
    const rotated = await signingKey('RS384');
    expectInvalidClient(await assertionGrant(await assertion(clientId, rotated)), /No key of the client's JWK Set/);
    // The client publishes its new key; past the one-second cooldown the server fetches the set again.
    const { jwksUri } = (await admin.get(`/ClientApplication/${clientId}`)).body;
    served.set(new URL(jwksUri).pathname.slice(1), [key.publicJwk, rotated.publicJwk]);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const res = await assertionGrant(await assertion(clientId, rotated));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it('refuses a client with neither a stored JWK Set nor a jwksUri', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk], false);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key)), /no public keys: store its JWK Set .* or register its jwksUri/);
  });

  it('with a stored JWK Set and a jwksUri, looks for a key id the stored set lacks at the jwksUri', async () => {
    const admin = api.newProject();
    const stored = await signingKey('ES384');
    const published = await signingKey('RS384');
    const path = randomUUID();
    served.set(path, [published.publicJwk]);
    const extension = [{ url: 'https://flint.dev/fhir/StructureDefinition/client-jwks', valueString: JSON.stringify({ keys: [stored.publicJwk] }) }];
    const { clientId } = await addMemberClient(api, admin, { client: { name: 'moving service', jwksUri: `${jwksUrl}${path}`, extension } });
    expect((await assertionGrant(await assertion(clientId, stored))).status).toBe(200);
    expect((await assertionGrant(await assertion(clientId, published))).status).toBe(200);
    expectInvalidClient(await assertionGrant(await assertion(clientId, await signingKey('RS384'))), /No key of the client's JWK Set/);
  });

  it('refuses an assertion naming no client, and a client_id that differs from iss', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(randomUUID(), key)), /names no client application/);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key), { client_id: randomUUID() }), /client_id differs/);
  });

  it('answers invalid_request for a wrong assertion type, a missing assertion, or a secret beside it', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const signed = await assertion(clientId, key);
    const wrongType = await assertionGrant(signed, { client_assertion_type: 'urn:example:saml' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error).toBe('invalid_request');
    const missing = await tokenRequest(api, { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE });
    expect(missing.status).toBe(400);
    expect(missing.body.error_description).toMatch(/client_assertion is required/);
    const both = await assertionGrant(signed, { client_secret: 'x' });
    expect(both.status).toBe(400);
    expect(both.body.error).toBe('invalid_request');
  });

  it('answers invalid_client when the JWK Set cannot be fetched', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const { jwksUri } = (await admin.get(`/ClientApplication/${clientId}`)).body;
    served.delete(new URL(jwksUri).pathname.slice(1));
    expectInvalidClient(await assertionGrant(await assertion(clientId, key)), /JWK Set/);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('client assertions on two servers of one PostgreSQL database', async () => {
  const other = await startServer(loadConfig(testEnv()), { log: pino({ level: 'silent' }) });
  afterAll(() => other.close());
  const viaOther = (clientAssertion: string) =>
    tokenRequest(
      { ...api, raw: (path: string, init?: RequestInit) => fetch(`${other.url}${path}`, init) },
      { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion },
    );

  it('refuses on one server an assertion already used on the other', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const signed = await assertion(clientId, key);
    expect((await assertionGrant(signed)).status).toBe(200);
    expectInvalidClient(await viaOther(signed), /already used/);
  });

  it('lets exactly one of 6 concurrent uses of one assertion across both servers succeed', async () => {
    const admin = api.newProject();
    const key = await signingKey('ES384');
    const clientId = await backendClient(admin, [key.publicJwk]);
    const signed = await assertion(clientId, key);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? viaOther(signed) : assertionGrant(signed))));
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401, 401]);
  });
});

describe('/.well-known/smart-configuration for backend services', () => {
  it('lists private_key_jwt with RS384 and ES384, and client-confidential-asymmetric', async () => {
    const res = await getJson(api, '/.well-known/smart-configuration');
    expect(res.status).toBe(200);
    expect(res.body.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(res.body.token_endpoint_auth_signing_alg_values_supported).toEqual(['RS384', 'ES384']);
    expect(res.body.capabilities).toContain('client-confidential-asymmetric');
  });
});
