import { ID_SOURCE } from '../fhir/ids.js';
import { decodeJwt, type JWTPayload } from 'jose';
import type { Config, ExternalAuthProvider } from '../config.js';
import type { Identity } from '../identity/identity.js';
import type { ProjectMembership } from '../fhir/resources.js';
import { membershipsByExternalId, membershipsReferencing, parseReference } from './accounts.js';
import { sha256Base64Url } from './secrets.js';
import type { SharedStore } from '../cache/shared-store.js';
import { TokenError, type TokenResponse } from './tokens.js';
import type { Database } from '../db/database.js';

const CACHE_MS = 60 * 60_000;

/** What external authentication needs of the accounts (the AuthService): memberships, and identities for them. */
export interface MembershipIdentities {
  readonly db: Database;
  identityFor(membership: ProjectMembership, extra?: Partial<Identity>): Promise<Identity>;
}

/** The outcome of validating one external token, kept for an hour (SPEC 5 rule 9). */
export interface ExternalResult {
  readonly claims: JWTPayload & Record<string, unknown>;
  readonly userinfo: Record<string, unknown>;
  readonly membership: ProjectMembership;
  readonly identity: Identity;
  /** Our credentials for that membership, issued once per cached validation. */
  credentials?: TokenResponse;
  readonly until: number;
}

/**
 * Direct external authentication (SPEC 5): a JWT from a configured issuer is validated by calling
 * the provider's userinfo endpoint with it, then mapped to one ProjectMembership by `fhirUser`
 * (or `ext.fhirUser`) or else by `sub` = `ProjectMembership.externalId`. Results are cached for an
 * hour, never past the token's `exp`, keyed by issuer and a hash of the token: in memory, and in
 * Redis when REDIS_URL is set, so that several servers call the provider once per token.
 */
export class ExternalAuth {
  private readonly cache = new Map<string, ExternalResult>();
  /** Calls in flight, so concurrent first uses of one token call the provider once. */
  private readonly pending = new Map<string, Promise<ExternalResult>>();
  private shared: SharedStore | undefined;

  constructor(
    private readonly config: Config,
    private readonly capacity = 10_000,
  ) {}

  /** The configured provider of a JWT, if it is one (decoding only: nothing is trusted yet). */
  providerOf(token: string): { provider: ExternalAuthProvider; claims: JWTPayload & Record<string, unknown> } | undefined {
    let claims: JWTPayload & Record<string, unknown>;
    try {
      claims = decodeJwt(token) as JWTPayload & Record<string, unknown>;
    } catch {
      return undefined;
    }
    const provider = this.config.externalAuthProviders.find((p) => p.issuer === claims.iss);
    return provider ? { provider, claims } : undefined;
  }

  /** From now on validations (and the credentials issued for them) are shared through `store`. */
  shareThrough(store: SharedStore): void {
    this.shared = store;
  }

  async validate(auth: MembershipIdentities, token: string): Promise<ExternalResult> {
    const found = this.providerOf(token);
    if (!found) throw new TokenError('The token was not issued by a configured identity provider');
    const { provider, claims } = found;
    const now = Date.now();
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) throw new TokenError('The external token has expired');
    const key = cacheKey(provider, token);
    const cached = this.cache.get(key);
    if (cached && cached.until > now) return cached;
    if (cached) this.cache.delete(key);
    let inFlight = this.pending.get(key);
    if (!inFlight) {
      inFlight = this.sharedOrResolved(auth, key, provider, token, claims).finally(() => this.pending.delete(key));
      this.pending.set(key, inFlight);
    }
    const result = await inFlight;
    if (this.cache.size >= this.capacity) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, result);
    return result;
  }

  /** After our credentials were issued for a validation: the other servers hand out the same ones. */
  async shareCredentials(token: string, result: ExternalResult): Promise<void> {
    const found = this.providerOf(token);
    if (found) await this.share(cacheKey(found.provider, token), result);
  }

  private async sharedOrResolved(
    auth: MembershipIdentities,
    key: string,
    provider: ExternalAuthProvider,
    token: string,
    claims: JWTPayload & Record<string, unknown>,
  ): Promise<ExternalResult> {
    const stored = await this.shared?.get(key);
    if (stored) {
      const result = JSON.parse(stored) as ExternalResult;
      if (result.until > Date.now()) return result;
    }
    const result = await this.resolve(auth, provider, token, claims);
    await this.share(key, result);
    return result;
  }

  private async share(key: string, result: ExternalResult): Promise<void> {
    await this.shared?.set(key, JSON.stringify(result), result.until - Date.now());
  }

  private async resolve(
    auth: MembershipIdentities,
    provider: ExternalAuthProvider,
    token: string,
    claims: JWTPayload & Record<string, unknown>,
  ): Promise<ExternalResult> {
    const userinfo = await callUserInfo(provider, token);
    const membership = await identify(auth, claims);
    const identity = await auth.identityFor(membership, { subject: membership.user?.reference, scope: 'openid' });
    return { claims, userinfo, membership, identity, until: Math.min(Date.now() + CACHE_MS, (claims.exp as number) * 1000) };
  }
}

/** Issuer and a hash of the token: the token itself is never stored. */
function cacheKey(provider: ExternalAuthProvider, token: string): string {
  return `external:${provider.issuer} ${sha256Base64Url(token)}`;
}

async function callUserInfo(provider: ExternalAuthProvider, token: string): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(provider.userInfoUrl, { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
  } catch {
    throw new TokenError('The identity provider could not be reached to validate the token');
  }
  if (!response.ok) throw new TokenError(`The identity provider refused the token (status ${response.status})`);
  try {
    const body = (await response.json()) as unknown;
    return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** SPEC 5 rule 4: `fhirUser` (or `ext.fhirUser`) first, else `sub` against ProjectMembership.externalId. */
async function identify(auth: MembershipIdentities, claims: Record<string, unknown>): Promise<ProjectMembership> {
  const ext = claims.ext as Record<string, unknown> | undefined;
  const fhirUser = typeof claims.fhirUser === 'string' ? claims.fhirUser : typeof ext?.fhirUser === 'string' ? ext.fhirUser : undefined;
  let memberships: ProjectMembership[];
  let what: string;
  if (fhirUser) {
    what = `fhirUser ${fhirUser}`;
    const profiles = await findProfiles(auth, fhirUser);
    memberships = (await Promise.all(profiles.map((ref) => membershipsReferencing(auth.db, 'profile', ref)))).flat();
  } else if (typeof claims.sub === 'string' && claims.sub !== '') {
    what = `sub ${claims.sub}`;
    memberships = await membershipsByExternalId(auth.db, claims.sub);
  } else {
    throw new TokenError('The external token has neither a fhirUser nor a sub claim');
  }
  if (memberships.length === 0) throw new TokenError(`No project membership matches the ${what}`);
  if (memberships.length > 1) {
    throw new TokenError(`${memberships.length} project memberships match the ${what}: it is ambiguous, so the token is refused`);
  }
  return memberships[0];
}

/**
 * SPEC 5 rule 5: `Type/id`, `Type?search` or an absolute URL of either. Searches support `_id`,
 * `identifier` (`system|value` or `value`), `email` and `name`-free exact fields of the profile.
 */
async function findProfiles(auth: MembershipIdentities, fhirUser: string): Promise<string[]> {
  let value = fhirUser;
  if (/^https?:\/\//.test(value)) {
    const url = new URL(value);
    const match = new RegExp(`([A-Z][A-Za-z]+(?:/${ID_SOURCE})?)$`).exec(url.pathname);
    if (!match) return [];
    value = match[1] + url.search;
  }
  const direct = parseReference(value);
  if (direct) return [`${direct[0]}/${direct[1]}`];
  const search = /^([A-Z][A-Za-z]+)\?(.*)$/.exec(value);
  if (!search) return [];
  const [, type, query] = search;
  const params = new URLSearchParams(query);
  const clauses: string[] = [];
  const args: unknown[] = [type];
  for (const [name, raw] of params) {
    if (name === '_id') {
      args.push(raw);
      clauses.push(`id = $${args.length}`);
    } else if (name === 'identifier') {
      const [system, code] = raw.includes('|') ? raw.split('|', 2) : [undefined, raw];
      args.push(JSON.stringify([{ ...(system ? { system } : {}), value: code }]));
      clauses.push(`content::jsonb->'identifier' @> $${args.length}::jsonb`);
    } else if (name === 'email') {
      args.push(JSON.stringify([{ system: 'email', value: raw }]));
      clauses.push(`content::jsonb->'telecom' @> $${args.length}::jsonb`);
    } else {
      return [];
    }
  }
  if (clauses.length === 0) return [];
  const rows = await auth.db.query<{ id: string }>(
    `SELECT id FROM resource WHERE "resourceType" = $1 AND NOT deleted AND ${clauses.join(' AND ')} LIMIT 10`,
    args,
  );
  return rows.map((row) => `${type}/${row.id}`);
}
