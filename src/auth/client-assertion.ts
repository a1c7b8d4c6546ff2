import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { SqlExecutor } from '../db/database.js';
import type { ClientApplication } from '../fhir/resources.js';
import { oauth } from './oauth-errors.js';
import { parseStoredJwks, storedJwksText } from './stored-jwks.js';
import { useOnce } from './used-values.js';

/** RFC 7523 section 2.2: the `client_assertion_type` of a JWT client assertion. */
export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** SMART Backend Services: clients sign with RS384 or ES384; nothing else is accepted. */
export const ASSERTION_ALGORITHMS = ['RS384', 'ES384'] as const;
/** SMART Backend Services: an assertion expires no more than five minutes after it is made. */
const MAX_LIFETIME_SECONDS = 300;
/** Clock difference tolerated between the client and this server, on `exp`, `nbf` and `iat`. */
const CLOCK_TOLERANCE_SECONDS = 30;
const MAX_JTI_LENGTH = 256;
/** Key sets kept per jwksUri, and stored sets per text (oldest dropped beyond this). */
const MAX_KEY_SETS = 1000;

/**
 * Client authentication by a signed JWT (SMART Backend Services, RFC 7523 section 3): the client
 * signs an assertion with its private key, and the server checks it with the public keys stored
 * on the ClientApplication (src/auth/stored-jwks.ts) or found at its `jwksUri`, in that order: a
 * key id the stored set lacks is looked for at the URL, so a client can move from one to the
 * other. Remote key sets are fetched with a timeout, kept five minutes and fetched again when an
 * assertion names a key id they lack (at most once a second per URL, so that made-up key ids
 * cannot make the server hammer the client's host). Stored sets are kept by their text, so a
 * changed set is a new entry and its keys are imported once.
 */
export class ClientAssertions {
  private readonly keySets = new Map<string, JWTVerifyGetKey>();
  private readonly storedSets = new Map<string, JWTVerifyGetKey>();

  /** `tokenUrl`: this server's token endpoint, the `aud` every assertion must name. */
  constructor(readonly tokenUrl: string) {}

  /**
   * The client an assertion claims to come from (`iss`, which must equal `sub`), read without
   * checking the signature: the client's keys are found from it. A malformed one is refused.
   */
  claimedClient(assertion: string): string {
    let claims: JWTPayload;
    try {
      decodeProtectedHeader(assertion);
      claims = decodeJwt(assertion);
    } catch {
      throw oauth.invalidClient('client_assertion is not a JWT (RFC 7523 section 3)');
    }
    if (typeof claims.iss !== 'string' || claims.iss === '') throw oauth.invalidClient('The client assertion has no iss (the client id)');
    if (claims.sub !== claims.iss) throw oauth.invalidClient('The client assertion must have sub equal to iss (the client id)');
    return claims.iss;
  }

  /**
   * Checks an assertion of `client`: its algorithm (RS384, ES384), signature by a key of the
   * client's JWK Set, issuer, audience (the token endpoint), expiry (at most five minutes ahead)
   * and `jti`, which is recorded so that the same assertion is refused if presented again.
   */
  async verify(db: SqlExecutor, assertion: string, client: ClientApplication): Promise<void> {
    const alg = decodeProtectedHeader(assertion).alg;
    if (!ASSERTION_ALGORITHMS.includes(alg as (typeof ASSERTION_ALGORITHMS)[number])) {
      throw oauth.invalidClient(`Client assertions signed with ${String(alg)} are not accepted: sign with ${ASSERTION_ALGORITHMS.join(' or ')}`);
    }
    const payload = await this.checkSignature(assertion, client.id!, this.keysOf(client));
    const now = Math.floor(Date.now() / 1000);
    const exp = payload.exp!;
    if (exp - now > MAX_LIFETIME_SECONDS + CLOCK_TOLERANCE_SECONDS) {
      throw oauth.invalidClient(`The client assertion expires more than ${MAX_LIFETIME_SECONDS} seconds from now: make exp at most 5 minutes ahead`);
    }
    const jti = payload.jti;
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
      throw oauth.invalidClient(`The client assertion needs a jti (a unique string of at most ${MAX_JTI_LENGTH} characters)`);
    }
    const fresh = await useOnce(db, `jti:${client.id}:${jti}`, new Date((exp + CLOCK_TOLERANCE_SECONDS) * 1000));
    if (!fresh) throw oauth.invalidClient('This client assertion was already used (its jti was seen before): make a new one for every token request');
  }

  private async checkSignature(assertion: string, clientId: string, keys: JWTVerifyGetKey): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(assertion, keys, {
        algorithms: [...ASSERTION_ALGORITHMS],
        issuer: clientId,
        subject: clientId,
        audience: this.tokenUrl,
        requiredClaims: ['exp', 'jti'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      return payload;
    } catch (error) {
      throw oauth.invalidClient(assertionFailure(error, this.tokenUrl));
    }
  }

  /** The client's keys: its stored set, then its jwksUri's for a key id the stored set lacks. */
  private keysOf(client: ClientApplication): JWTVerifyGetKey {
    const text = storedJwksText(client);
    const remote = client.jwksUri ? this.keySetOf(client.jwksUri) : undefined;
    if (text === undefined) {
      if (remote) return remote;
      throw oauth.invalidClient(
        'This client application has no public keys: store its JWK Set (extension https://flint.dev/fhir/StructureDefinition/client-jwks) or register its jwksUri to authenticate with a client assertion',
      );
    }
    const stored = this.storedSetOf(text);
    if (!remote) return stored;
    return async (header, token) => {
      try {
        return await stored(header, token);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw error;
        return remote(header, token);
      }
    };
  }

  private storedSetOf(text: string): JWTVerifyGetKey {
    let keys = this.storedSets.get(text);
    if (!keys) {
      const parsed = parseStoredJwks(text);
      // Checked when the client was written; a set stored before that check is refused here.
      if (typeof parsed === 'string') throw oauth.invalidClient(`The JWK Set stored on this client application ${parsed}`);
      keys = createLocalJWKSet(parsed);
      if (this.storedSets.size >= MAX_KEY_SETS) this.storedSets.delete(this.storedSets.keys().next().value!);
      this.storedSets.set(text, keys);
    }
    return keys;
  }

  private keySetOf(jwksUri: string): JWTVerifyGetKey {
    let keys = this.keySets.get(jwksUri);
    if (!keys) {
      let url: URL;
      try {
        url = new URL(jwksUri);
      } catch {
        throw oauth.invalidClient('The jwksUri of this client application is not a URL');
      }
      keys = createRemoteJWKSet(url, { timeoutDuration: 5000, cooldownDuration: 1000, cacheMaxAge: 300_000 });
      if (this.keySets.size >= MAX_KEY_SETS) this.keySets.delete(this.keySets.keys().next().value!);
      this.keySets.set(jwksUri, keys);
    }
    return keys;
  }
}

/** Why jose refused an assertion, as the `error_description` of an `invalid_client`. */
function assertionFailure(error: unknown, tokenUrl: string): string {
  const { code, claim } = error as { code?: string; claim?: string };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'The client assertion has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'aud') return `The client assertion's aud must be the token endpoint, ${tokenUrl}`;
      return `The client assertion's ${claim ?? 'claims'} claim is missing or wrong`;
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return "No key of the client's JWK Set matches the client assertion's kid and alg";
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return "Several keys of the client's JWK Set match: give the assertion a kid";
    case 'ERR_JWKS_TIMEOUT':
      return "The client's JWK Set (jwksUri) did not answer in time";
    case 'ERR_JWKS_INVALID':
    case 'ERR_JOSE_GENERIC':
      return "The client's JWK Set (jwksUri) could not be read as a JWK Set";
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return "The client assertion's signature does not verify with the client's key";
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return `Client assertions must be signed with ${ASSERTION_ALGORITHMS.join(' or ')}`;
    default:
      return code ? `The client assertion was refused (${code})` : "The client's JWK Set (jwksUri) could not be fetched";
  }
}
