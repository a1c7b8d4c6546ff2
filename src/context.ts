import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { BinaryStorage } from './storage/binary-storage.js';
import type { ResourceCache } from './storage/resource-cache.js';
import type { Repository } from './storage/repository.js';
import { GuardedRepository } from './auth/access.js';
import type { AuthService } from './auth/service.js';
import type { InvalidationBus } from './cache/invalidation.js';
import type { SearchCache } from './search/search-cache.js';

/** Who is calling, as decided by authentication. */
export interface Identity {
  /** The project the caller acts in; every read and write is scoped to it. */
  readonly projectId: string;
  /** A super admin sees every project (DESIGN 5); `_project=<id>` narrows a search to one. */
  readonly superAdmin: boolean;
  /** Admin of `projectId`: manages its memberships, client applications and access policies. */
  readonly projectAdmin?: boolean;
  /** The ProjectMembership the token acts through. */
  readonly membershipId?: string;
  /** `User/<id>` or `ClientApplication/<id>`: who logged in. */
  readonly subject?: string;
  /** The membership's profile, e.g. `Practitioner/<id>` (or the ClientApplication itself). */
  readonly profile?: string;
  /** The ClientApplication the token was issued to, if any. */
  readonly clientId?: string;
  /** The Login behind the token (revoked by /oauth2/logout). */
  readonly loginId?: string;
  readonly scope?: string;
  /** Rules of the membership's AccessPolicy; absent means every type, read and write. */
  readonly accessPolicy?: AccessRules;
}

/** An AccessPolicy reduced to what enforcement needs (resource types are case-sensitive). */
export interface AccessRules {
  readonly policyId: string;
  /** Allowed types; `*` allows every type. */
  readonly resources: readonly { readonly resourceType: string; readonly readonly: boolean; readonly criteria?: string }[];
}

/** Long-lived services the server builds once at start. */
export interface Services {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly binaryStorage: BinaryStorage;
  readonly resourceCache: ResourceCache;
  /** Keys, token signing and verification, and the caches that keep them cheap (src/auth). */
  readonly auth: AuthService;
  /** Notices that keep several servers' in-memory caches honest (src/cache/invalidation.ts). */
  readonly bus: InvalidationBus;
  /** Exact search counts until a write could change them (src/search/search-cache.ts). */
  readonly searchCache: SearchCache;
}

/** Built once per request and passed down; REST handlers and GraphQL resolvers get the same one. */
export interface RequestContext {
  readonly requestId: string;
  readonly identity: Identity;
  readonly repo: Repository;
  readonly db: { healthy(): Promise<boolean>; readonly kind: 'pglite' | 'postgres' };
  /** The database itself, for services that run SQL under their own scoping (search, terminology tables). */
  readonly database: Database;
  readonly log: Logger;
  readonly config: Config;
  /** Accounts and tokens, for handlers that create them (Project/$init, invites). */
  readonly auth: AuthService;
  /** Exact search counts kept between requests; searches pass it on (SearchServices.searchCache). */
  readonly searchCache?: SearchCache;
}

/** A pure function of its inputs, so tests can build a context without HTTP. */
export function createRequestContext(services: Services, identity: Identity, requestId: string): RequestContext {
  const log = services.log.child({ reqId: requestId });
  return {
    requestId,
    identity,
    repo: new GuardedRepository(services, identity),
    db: { kind: services.db.kind, healthy: () => isDatabaseHealthy(services.db) },
    database: services.db,
    log,
    config: services.config,
    auth: services.auth,
    searchCache: services.searchCache,
  };
}

export async function isDatabaseHealthy(db: Database): Promise<boolean> {
  try {
    await db.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}
