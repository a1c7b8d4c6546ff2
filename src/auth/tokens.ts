import { randomUUID } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Config } from '../config.js';
import type { Identity } from '../identity/identity.js';
import { SIGNING_ALGORITHM, type ServerKeys } from './keys.js';

export const ACCESS_TOKEN_SECONDS = 3600;
export const REFRESH_TOKEN_SECONDS = 14 * 24 * 3600;

/** Claims of our access tokens (issuer, subject, login, profile, project, scope, client, expiry). */
export interface AccessClaims extends JWTPayload {
  iss: string;
  sub: string;
  login_id: string;
  profile: string;
  project: string;
  scope: string;
  client_id?: string;
  /** SMART launch context (bare ids). */
  patient?: string;
  encounter?: string;
  exp: number;
}

/** Why a bearer token was refused; the text goes into the 401 OperationOutcome. */
export class TokenError extends Error {}

/** Signs and verifies our JWTs: ES256 only (pinned when verifying), our issuer only. */
export class TokenSigner {
  readonly issuer: string;

  constructor(
    config: Config,
    private readonly keys: ServerKeys,
  ) {
    this.issuer = config.baseUrl;
  }

  async sign(claims: Omit<AccessClaims, 'iss' | 'exp' | 'iat'>, seconds = ACCESS_TOKEN_SECONDS): Promise<string> {
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: this.keys.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setIssuedAt()
      .setJti(randomUUID())
      .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
      .sign(this.keys.privateKey);
  }

  /** Verifies signature, algorithm, issuer and expiry; returns the claims or throws TokenError. */
  async verify(token: string): Promise<AccessClaims> {
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw new TokenError('The bearer token is not a JWT');
    }
    if (header.alg !== SIGNING_ALGORITHM) throw new TokenError(`Tokens signed with ${String(header.alg)} are not accepted`);
    const key = header.kid ? this.keys.publicKeys.get(header.kid) : undefined;
    if (!key) throw new TokenError('The bearer token was not signed by this server');
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: [SIGNING_ALGORITHM], issuer: this.issuer, requiredClaims: ['exp', 'sub'] });
      if (typeof payload.login_id !== 'string' || typeof payload.project !== 'string') {
        throw new TokenError('The bearer token lacks login_id or project');
      }
      return payload as AccessClaims;
    } catch (error) {
      if (error instanceof TokenError) throw error;
      const code = (error as { code?: string }).code;
      if (code === 'ERR_JWT_EXPIRED') throw new TokenError('The bearer token has expired: get a new one');
      if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') throw new TokenError('The bearer token was issued by another server');
      throw new TokenError('The bearer token signature is invalid');
    }
  }
}

/** An identity the cache held for a token when it was looked up (IdentityCache.lookup). */
export interface KnownIdentity {
  readonly identity: Identity;
  readonly until: number;
  readonly removals: number;
}

/**
 * Verified tokens, kept briefly (at most a minute, never past their expiry) so that a request with
 * a token seen recently costs one map lookup. Revocation (logout) and changes of the resources an
 * identity is made of evict entries at once on every server (AuthService.shareThrough); should a
 * notice be lost, the minute bounds the staleness.
 */
export class IdentityCache {
  private readonly entries = new Map<string, { identity: Identity; until: number }>();
  /** Counts entries removed (evictions, expiries, logouts): a KnownIdentity older than one may be stale. */
  private removals = 0;

  constructor(
    private readonly ttlMs = 60_000,
    private readonly capacity = 20_000,
  ) {}

  get(token: string): Identity | undefined {
    return this.lookup(token)?.identity;
  }

  /**
   * The identity of `token` with what tells later whether it still holds (stillHolds): one lookup
   * serves a request's admission and its authentication, whatever it waited for between them.
   */
  lookup(token: string): KnownIdentity | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (entry.until < Date.now()) {
      this.remove(token);
      return undefined;
    }
    return { identity: entry.identity, until: entry.until, removals: this.removals };
  }

  /** Whether `known` is still what the cache would answer: nothing removed since, not expired. */
  stillHolds(known: KnownIdentity): boolean {
    return known.removals === this.removals && known.until >= Date.now();
  }

  set(token: string, identity: Identity, expiresAtMs: number): void {
    if (this.entries.size >= this.capacity) this.remove(this.entries.keys().next().value!);
    this.entries.set(token, { identity, until: Math.min(Date.now() + this.ttlMs, expiresAtMs) });
  }

  evictLogin(loginId: string): void {
    this.evict((identity) => identity.loginId === loginId);
  }

  /** Drops every token whose identity matches (a changed membership, policy, project...). */
  evict(matches: (identity: Identity) => boolean): void {
    for (const [token, entry] of this.entries) if (matches(entry.identity)) this.remove(token);
  }

  clear(): void {
    this.removals++;
    this.entries.clear();
  }

  private remove(token: string): void {
    this.removals++;
    this.entries.delete(token);
  }
}

/** What a token response carries (RFC 6749 5.1 plus the project and profile references). */
export interface TokenResponse {
  token_type: 'Bearer';
  access_token: string;
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  /** SMART launch context (bare ids), when the token has one. */
  patient?: string;
  encounter?: string;
  project: { reference: string };
  profile: { reference: string };
}
