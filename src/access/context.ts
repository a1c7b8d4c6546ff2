import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { callerOf, primaryOnly, type ReadSession } from '../cache/read-your-writes.js';
import { JoinedTransaction } from '../db/joined-transaction.js';
import type { Identity } from '../identity/identity.js';
import type { RequestContext, Services } from '../operations/context.js';
import { GuardedRepository } from './guarded-repository.js';

/** A pure function of its inputs, so tests can build a context without HTTP. */
export function createRequestContext(services: Services, identity: Identity, requestId: string): RequestContext {
  const reads = readSessionOf(services, identity);
  // Made on first use: most requests log nothing but their request line (written without it).
  let log: Logger | undefined;
  const ctx: RequestContext = {
    get log() {
      return (log ??= services.log.child({ reqId: requestId }));
    },
    requestId,
    identity,
    repo: new GuardedRepository(services, identity, reads),
    databaseHealth: { kind: services.db.kind, healthy: () => isDatabaseHealthy(services.db) },
    database: reads.primary,
    reads,
    config: services.config,
    auth: services.auth,
    searchCache: services.searchCache,
    changeLog: services.changeLog,
    bots: services.bots,
    inTransaction: (work) => runInTransaction(services, ctx, work),
  };
  return ctx;
}

/**
 * One transaction for everything `work` does through the context it gets: caches learn its writes
 * and other servers hear of them only after the commit.
 */
async function runInTransaction<T>(services: Services, outer: RequestContext, work: (ctx: RequestContext) => Promise<T>): Promise<T> {
  let joined: JoinedTransaction | undefined;
  // Through the request's database: with read replicas, the commit marks the caller's next reads.
  const result = await outer.database.transaction(async (tx) => {
    joined = new JoinedTransaction(tx, services.db.kind);
    const database = joinedDatabase(services.db, joined);
    // Everything in a transaction reads in it, on the primary.
    const reads = primaryOnly(database);
    const inner: RequestContext = {
      ...outer,
      repo: new GuardedRepository(services, outer.identity, reads, joined),
      database,
      reads,
      transaction: joined,
      inTransaction: (nested) => nested(inner),
    };
    return work(inner);
  });
  joined?.committed();
  return result;
}

/** With read replicas, the caller's reads follow its writes (src/cache/read-your-writes.ts). */
function readSessionOf(services: Services, identity: Identity): ReadSession {
  return services.readRouting ? services.readRouting.session(callerOf(identity)) : primaryOnly(services.db);
}

/**
 * The database as the work of a transaction sees it: its statements join the transaction (on the
 * embedded database, one sent beside it would wait for it forever). Prisma calls still run on
 * their own; nothing a transaction admits makes one.
 */
function joinedDatabase(db: Database, joined: JoinedTransaction): Database {
  const view = Object.create(db) as Database;
  return Object.assign(view, {
    query: joined.query.bind(joined),
    execute: joined.execute.bind(joined),
    transaction: joined.transaction.bind(joined),
    afterCommit: joined.afterCommit.bind(joined),
    joined: joined.joined,
  });
}

export async function isDatabaseHealthy(db: Database): Promise<boolean> {
  try {
    await db.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}
