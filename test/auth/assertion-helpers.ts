import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { expect } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { tokenRequest, type JsonResponse } from './helpers.js';

/** SMART Backend Services test helpers: client keys, signed assertions, the token request. */

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function signingKey(alg: 'RS384' | 'ES384' | 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomUUID();
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export interface AssertionOptions {
  alg?: string;
  kid?: string;
  aud?: string;
  expiresIn?: number;
  jti?: string;
  sub?: string;
}

/** A client assertion of `clientId` signed by `key`, for the token endpoint at `tokenUrl`. */
export async function signAssertion(tokenUrl: string, clientId: string, key: SigningKey, options: AssertionOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: options.alg ?? key.alg, kid: options.kid ?? key.kid, typ: 'JWT' })
    .setIssuer(clientId)
    .setSubject(options.sub ?? clientId)
    .setAudience(options.aud ?? tokenUrl)
    .setJti(options.jti ?? randomUUID())
    .setIssuedAt(now)
    .setExpirationTime(now + (options.expiresIn ?? 300))
    .sign(key.privateKey);
}

/** `POST /oauth2/token` with a client assertion (scope `system/*.read` unless `extra` says otherwise). */
export function assertionGrantOn(api: TestServer, clientAssertion: string, extra: Record<string, string> = {}): Promise<JsonResponse> {
  return tokenRequest(api, {
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: clientAssertion,
    scope: 'system/*.read',
    ...extra,
  });
}

export function expectInvalidClient(res: { status: number; body: any }, description: RegExp): void {
  expect(res.status).toBe(401);
  expect(res.body.error).toBe('invalid_client');
  expect(res.body.error_description).toMatch(description);
}
