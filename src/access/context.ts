import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { callerOf, primaryOnly, type ReadSession } from '../cache/read-your-writes.js';
import { JoinedTransaction } from '../db/joined-transaction.js';
import { CancellableReads } from '../db/cancellable-reads.js';
import type { Reader } from '../db/replicas.js';
import type { Identity } from '../identity/identity.js';
import type { RequestContext, Services } from '../operations/context.js';
import { GuardedRepository } from './guarded-repository.js';

/**
 * A pure function of its inputs, so tests can build a context without HTTP. `clientGone` gives
 * the signal of the request's client closing its connection (asked on the first read only): the
 * request's reads, searches and history are then stopped when it aborts (docs/overload.md).
 */
export function createRequestContext(services: Services, identity: Identity, requestId: string, clientGone?: () => AbortSignal): RequestContext {
  const reads = readSessionOf(services, identity);
  return new ServiceContext(services, identity, requestId, clientGone ? new CancellableSession(reads, clientGone) : reads, undefined, undefined);
}

/**
 * A request's read session whose reads carry its client's signal (src/db/cancellation.ts). Writes,
 * transactions and the reads that decide a write go to `primary`, untouched: they run whole.
 */
class CancellableSession implements ReadSession {
  readonly primary: Database;
  private signal: AbortSignal | undefined;
  private last: { from: Reader; to: Reader } | undefined;
  private readonly gone = () => (this.signal ??= this.clientGone());

  constructor(
    private readonly session: ReadSession,
    private readonly clientGone: () => AbortSignal,
  ) {
    this.primary = session.primary;
  }

  reader(): Reader {
    const from = this.session.reader();
    if (this.last?.from !== from) this.last = { from, to: { db: new CancellableReads(from.db, this.gone), replica: from.replica } };
    return this.last.to;
  }

  usePrimary(): void {
    this.session.usePrimary();
  }

  wrote(): Promise<void> {
    return this.session.wrote();
  }
}

/**
 * A request's context. A class rather than an object literal with a getter and closures: every
 * request makes one, and a literal's accessor is defined anew each time and leaves the object in
 * dictionary mode, so each later property read was a dictionary lookup (both showed in profiles
 * of reads by id).
 */
class ServiceContext implements RequestContext {
  readonly repo: GuardedRepository;
  readonly database: Database;
  readonly config: Services['config'];
  readonly auth: Services['auth'];
  readonly searchCache: Services['searchCache'];
  readonly changeLog: Services['changeLog'];
  readonly bots: Services['bots'];
  /** Made on first use: most requests log nothing but their request line (written without it). */
  private logger: Logger | undefined = undefined;

  constructor(
    private readonly services: Services,
    readonly identity: Identity,
    readonly requestId: string,
    readonly reads: ReadSession,
    readonly transaction: JoinedTransaction | undefined,
    /** The context a transaction's context was made from: they share its logger. */
    private readonly outer: RequestContext | undefined,
  ) {
    this.repo = new GuardedRepository(services, identity, reads, transaction);
    this.database = reads.primary;
    this.config = services.config;
    this.auth = services.auth;
    this.searchCache = services.searchCache;
    this.changeLog = services.changeLog;
    this.bots = services.bots;
  }

  get log(): Logger {
    if (this.outer) return this.outer.log;
    return (this.logger ??= this.services.log.child({ reqId: this.requestId }));
  }

  get databaseHealth(): RequestContext['databaseHealth'] {
    const db = this.services.db;
    return { kind: db.kind, healthy: () => isDatabaseHealthy(db) };
  }

  inTransaction<T>(work: (ctx: RequestContext) => Promise<T>): Promise<T> {
    return this.transaction ? work(this) : runInTransaction(this.services, this, work);
  }
}

/**
 * One transaction for everything `work` does through the context it gets: caches learn its writes
 * and other servers hear of them only after the commit.
 */
async function runInTransaction<T>(services: Services, outer: ServiceContext, work: (ctx: RequestContext) => Promise<T>): Promise<T> {
  let joined: JoinedTransaction | undefined;
  // Through the request's database: with read replicas, the commit marks the caller's next reads.
  const result = await outer.database.transaction(async (tx) => {
    joined = new JoinedTransaction(tx, services.db.kind);
    // Everything in a transaction reads in it, on the primary.
    const reads = primaryOnly(joinedDatabase(services.db, joined));
    return work(new ServiceContext(services, outer.identity, outer.requestId, reads, joined, outer));
  });
  joined?.committed();
  return result;
}
/** With read replicas, the caller's reads follow its writes (src/cache/read-your-writes.ts). */
export function readSessionOf(services: Services, identity: Identity): ReadSession {
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
