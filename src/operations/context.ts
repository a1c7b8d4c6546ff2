import type { Logger } from 'pino';
import type { Identity } from '../identity/identity.js';
import type { Config } from '../config.js';
import type { Database, SqlExecutor } from '../db/database.js';
import type { BinaryStorage } from '../storage/binary-storage.js';
import type { ResourceCache } from '../storage/resource-cache.js';
import type { CreateBatches } from '../storage/create-batches.js';
import type { ResourceRepository } from '../storage/types.js';
import type { AuthService } from '../auth/service.js';
import type { InvalidationBus } from '../cache/invalidation.js';
import type { SearchCache } from '../cache/search-cache.js';
import type { ReadSession, ReadYourWrites } from '../cache/read-your-writes.js';
import type { ChangeLog } from '../storage/change-log.js';
import type { Resource } from '../fhir/types.js';

/** Long-lived services the server builds once at start. */
export interface Services {
  readonly config: Config;
  readonly db: Database;
  readonly log: Logger;
  readonly binaryStorage: BinaryStorage;
  readonly resourceCache: ResourceCache;
  /** Group commit of plain creates (CREATE_GROUPS_IN_FLIGHT; absent: each create alone). */
  readonly createBatches?: CreateBatches;
  /** Keys, token signing and verification, and the caches that keep them cheap (src/auth). */
  readonly auth: AuthService;
  /** Notices that keep several servers' in-memory caches honest (src/cache/invalidation.ts). */
  readonly bus: InvalidationBus;
  /** Exact search counts until a write could change them (src/cache/search-cache.ts). */
  readonly searchCache: SearchCache;
  /** Read replicas and the read-your-writes marks that route reads among them (DATABASE_READ_URL); absent: every read on the primary. */
  readonly readRouting?: ReadYourWrites;
  /** Records every write for the subscriptions' outbox (src/events); absent: nothing is recorded. */
  readonly changeLog?: ChangeLog;
  /** Runs bots in their sandbox (src/bots); absent where bots are not wired (some tests' contexts). */
  readonly bots?: BotExecutor;
}

/** Built once per request and passed down; REST handlers and GraphQL resolvers get the same one. */
export interface RequestContext {
  readonly requestId: string;
  readonly identity: Identity;
  readonly repo: ResourceRepository;
  readonly databaseHealth: { healthy(): Promise<boolean>; readonly kind: 'pglite' | 'postgres' };
  /**
   * The primary, for services that run SQL under their own scoping (terminology tables) and for
   * every write: with read replicas, a committed write through it marks the caller's next reads.
   */
  readonly database: Database;
  /** Where this request's reads, searches and history go: a replica that has the caller's writes, or the primary. */
  readonly reads: ReadSession;
  readonly log: Logger;
  readonly config: Config;
  /** Accounts and tokens, for handlers that create them (Project/$init, invites). */
  readonly auth: AuthService;
  /** Exact search counts kept between requests; searches pass it on (SearchServices.searchCache). */
  readonly searchCache?: SearchCache;
  /** The subscriptions' change log (Services.changeLog), for operations that queue deliveries themselves ($resend). */
  readonly changeLog?: ChangeLog;
  /** Runs bots (`$execute`, custom operations implemented by bots). */
  readonly bots?: BotExecutor;
  /** The transaction this context's reads, searches and writes join; absent outside inTransaction. */
  readonly transaction?: SqlExecutor;
  /**
   * Runs `work` with a context whose reads, searches and writes all join one new transaction:
   * committed when `work` resolves, rolled back when it throws. Inside one, it joins the open one.
   */
  inTransaction<T>(work: (ctx: RequestContext) => Promise<T>): Promise<T>;
}

/**
 * Runs a deployed Bot (src/bots supplies it through the composition root): `$execute`, custom
 * operations implemented by bots and other capabilities reach bots through this one interface.
 */
export interface BotExecutor {
  execute(ctx: RequestContext, request: BotExecutionRequest): Promise<BotExecutionAnswer>;
}

export interface BotExecutionRequest {
  /** The Bot as the caller read it (the caller's access to it is already checked). */
  bot: Resource;
  /** The handler's `event.input`: parsed JSON, text, or form fields. */
  input: unknown;
  contentType: string;
}

/** What the handler returned, or why it failed (status 400 with an OperationOutcome). */
export interface BotExecutionAnswer {
  status: number;
  contentType: string;
  body: string;
}
