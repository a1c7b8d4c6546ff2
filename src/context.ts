import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { BinaryStorage } from './storage/binary-storage.js';
import type { ResourceCache } from './storage/resource-cache.js';
import { Repository } from './storage/repository.js';

/** Who is calling, as decided by authentication. */
export interface Identity {
  /** The project the caller acts in; every read and write is scoped to it. */
  readonly projectId: string;
  /** A super admin sees every project (DESIGN 5). */
  readonly superAdmin: boolean;
}

/** Long-lived services the server builds once at start. */
export interface Services {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly binaryStorage: BinaryStorage;
  readonly resourceCache: ResourceCache;
}

/** Built once per request and passed down; REST handlers and GraphQL resolvers get the same one. */
export interface RequestContext {
  readonly requestId: string;
  readonly identity: Identity;
  readonly repo: Repository;
  readonly db: { healthy(): Promise<boolean>; readonly kind: 'pglite' | 'postgres' };
  readonly log: Logger;
  readonly config: Config;
}

/** A pure function of its inputs, so tests can build a context without HTTP. */
export function createRequestContext(services: Services, identity: Identity, requestId: string): RequestContext {
  const log = services.log.child({ reqId: requestId });
  return {
    requestId,
    identity,
    repo: new Repository(services, identity),
    db: { kind: services.db.kind, healthy: () => isDatabaseHealthy(services.db) },
    log,
    config: services.config,
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
