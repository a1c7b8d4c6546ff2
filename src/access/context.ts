import type { Database } from '../db/database.js';
import type { Identity } from '../identity/identity.js';
import type { RequestContext, Services } from '../operations/context.js';
import { GuardedRepository } from './guarded-repository.js';

/** A pure function of its inputs, so tests can build a context without HTTP. */
export function createRequestContext(services: Services, identity: Identity, requestId: string): RequestContext {
  const log = services.log.child({ reqId: requestId });
  return {
    requestId,
    identity,
    repo: new GuardedRepository(services, identity),
    databaseHealth: { kind: services.db.kind, healthy: () => isDatabaseHealthy(services.db) },
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
