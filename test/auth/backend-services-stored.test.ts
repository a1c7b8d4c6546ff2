import { randomUUID } from 'node:crypto';
import { decodeJwt, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, getJson } from './helpers.js';
import { assertionGrantOn, expectInvalidClient, signAssertion, signingKey, type AssertionOptions, type SigningKey } from './assertion-helpers.js';

/**
 * SMART Backend Services with the client's public keys stored on its ClientApplication (the
 * client-jwks extension) instead of published at a jwksUri.
 */

const api = await useTestServer();
const tokenUrl = `${api.server.services.config.baseUrl}oauth2/token`;
const JWKS_EXTENSION = 'https://flint.dev/fhir/StructureDefinition/client-jwks';

const storedKeys = (keys: JWK[]) => ({ url: JWKS_EXTENSION, valueString: JSON.stringify({ keys }) });

async function storedKeyClient(admin: ProjectClient, keys: JWK[]): Promise<string> {
  const { clientId } = await addMemberClient(api, admin, { client: { name: 'backend service', extension: [storedKeys(keys)] } });
  return clientId;
}

const assertion = (clientId: string, key: SigningKey, options: AssertionOptions = {}) => signAssertion(tokenUrl, clientId, key, options);
const assertionGrant = (clientAssertion: string) => assertionGrantOn(api, clientAssertion);

describe('client assertions checked with a JWK Set stored on the ClientApplication', () => {
  it('issues a token for an RS384 assertion, usable on the FHIR API', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await storedKeyClient(admin, [key.publicJwk]);
    await admin.post('/Patient', patientBody());
    const res = await assertionGrant(await assertion(clientId, key));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(decodeJwt(res.body.access_token)).toMatchObject({ client_id: clientId, scope: 'system/*.read' });
    const search = await getJson(api, '/fhir/R4/Patient', bearer(res.body.access_token));
    expect(search.status).toBe(200);
    expect(search.body.entry).toHaveLength(1);
  });

  it('issues a token for an ES384 assertion', async () => {
    const admin = api.newProject();
    const key = await signingKey('ES384');
    const clientId = await storedKeyClient(admin, [key.publicJwk]);
    const res = await assertionGrant(await assertion(clientId, key));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it('picks the key by kid among several stored keys, and refuses a kid it does not hold', async () => {
    const admin = api.newProject();
    const rsa = await signingKey('RS384');
    const ec = await signingKey('ES384');
    const clientId = await storedKeyClient(admin, [rsa.publicJwk, ec.publicJwk]);
    expect((await assertionGrant(await assertion(clientId, ec))).status).toBe(200);
    expect((await assertionGrant(await assertion(clientId, rsa))).status).toBe(200);
    const other = await signingKey('RS384');
    expectInvalidClient(await assertionGrant(await assertion(clientId, other)), /No key of the client's JWK Set matches/);
  });

  it('refuses an assertion whose kid names a stored key other than the one that signed it', async () => {
    const admin = api.newProject();
    const first = await signingKey('RS384');
    const second = await signingKey('RS384');
    const clientId = await storedKeyClient(admin, [first.publicJwk, second.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, first, { kid: second.kid })), /signature does not verify/);
  });

  it('refuses a replayed jti', async () => {
    const admin = api.newProject();
    const key = await signingKey('ES384');
    const clientId = await storedKeyClient(admin, [key.publicJwk]);
    const signed = await assertion(clientId, key);
    expect((await assertionGrant(signed)).status).toBe(200);
    expectInvalidClient(await assertionGrant(signed), /already used/);
  });

  it('refuses an expired assertion and one whose exp is more than 5 minutes ahead', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await storedKeyClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { expiresIn: -120 })), /expired/);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { expiresIn: 3600 })), /at most 5 minutes/);
  });

  it('refuses an assertion for another audience', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS384');
    const clientId = await storedKeyClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key, { aud: `${tokenUrl}/other` })), /aud must be the token endpoint/);
  });

  it('refuses RS256 even when the stored key is the signer', async () => {
    const admin = api.newProject();
    const key = await signingKey('RS256');
    const clientId = await storedKeyClient(admin, [key.publicJwk]);
    expectInvalidClient(await assertionGrant(await assertion(clientId, key)), /RS256 are not accepted/);
  });

  it('uses the keys stored after an update of the client', async () => {
    const admin = api.newProject();
    const old = await signingKey('RS384');
    const clientId = await storedKeyClient(admin, [old.publicJwk]);
    const replacement = await signingKey('ES384');
    const client = (await admin.get(`/ClientApplication/${clientId}`)).body;
    const updated = await admin.put(`/ClientApplication/${clientId}`, { ...client, extension: [storedKeys([replacement.publicJwk])] });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect((await assertionGrant(await assertion(clientId, replacement))).status).toBe(200);
    expectInvalidClient(await assertionGrant(await assertion(clientId, old)), /No key of the client's JWK Set matches/);
  });
});

describe('a stored JWK Set is checked when the ClientApplication is written', () => {
  const create = (admin: ProjectClient, extension: unknown[]) =>
    admin.post('/ClientApplication', { resourceType: 'ClientApplication', name: `app ${randomUUID()}`, extension });

  function expectRefused(res: { status: number; body: any }, text: RegExp): void {
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].expression).toEqual(['ClientApplication.extension']);
    expect(res.body.issue[0].details.text).toMatch(text);
  }

  it('refuses text that is not JSON', async () => {
    expectRefused(await create(api.newProject(), [{ url: JWKS_EXTENSION, valueString: 'not json' }]), /is not JSON/);
  });

  it('refuses a JSON object without keys', async () => {
    expectRefused(await create(api.newProject(), [{ url: JWKS_EXTENSION, valueString: '{"keys":[]}' }]), /at least one key/);
  });

  it('refuses a private key', async () => {
    const { generateKeyPair, exportJWK } = await import('jose');
    const { privateKey } = await generateKeyPair('ES384', { extractable: true });
    const res = await create(api.newProject(), [storedKeys([await exportJWK(privateKey)])]);
    expectRefused(res, /private key: store the public key only/);
  });

  it('refuses a symmetric key', async () => {
    expectRefused(await create(api.newProject(), [storedKeys([{ kty: 'oct', k: 'c2VjcmV0' }])]), /kty RSA or EC/);
  });

  it('refuses the extension with another value type', async () => {
    expectRefused(await create(api.newProject(), [{ url: JWKS_EXTENSION, valueUri: 'https://example.org/jwks' }]), /takes valueString/);
  });
});
