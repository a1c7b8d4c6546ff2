import { PrismaPg } from '@prisma/adapter-pg';
import type {
  ArgType,
  SqlDriverAdapter,
  SqlDriverAdapterFactory,
  SqlQuery,
  SqlQueryable,
  Transaction,
} from '@prisma/driver-adapter-utils';
import pg from 'pg';
import type { Config } from '../config.js';
import { errors } from '../fhir/outcome.js';
import { preparingClient, StatementNames } from './prepared-statements.js';
import { CancellablePool, clientClosed } from './cancellation.js';
import { WorkerSqlAdapter } from './worker-adapter.js';
import { PrismaClient } from '../generated/prisma/client.js';

export type Row = Record<string, unknown>;

/** How a statement may be planned. */
export interface QueryOptions {
  /**
   * The statement's best plan does not depend on its values (a read driven by a selective key such
   * as an id or a reference, or an insert of given rows): PostgreSQL may plan it once per
   * connection instead of at every execution. Ignored inside transactions and on the embedded
   * database.
   */
  planOnce?: boolean;
  /**
   * Rows as pg itself gives them, straight from the PostgreSQL pool without the Prisma adapter
   * (whose conversion of each value and debug logging of each statement are a share of a read's
   * CPU: docs/benchmarks.md): text, uuid and boolean columns as strings and booleans, timestamptz
   * as a Date (toInstant reads both forms). Only for statements whose columns are of those types.
   * Ignored inside transactions and on the embedded database. On `execute`, the statement goes
   * to the pool the same way (its arguments as pg sends them: strings, numbers, null): a create's
   * statement carries its resources and index rows as JSON texts, which the adapter would also
   * keep in its debug history of the last 100 statements, past the young generation.
   */
  pgValues?: boolean;
  /**
   * The request's client going away (src/db/cancellation.ts): a statement in flight is cancelled
   * on PostgreSQL, one still waiting for the embedded database's connection is dropped
   * (worker-adapter.ts), and none is sent once it has aborted (both databases). Ignored inside
   * transactions.
   */
  signal?: AbortSignal;
}

/** Anything that runs SQL: the database itself or an open transaction. */
export interface SqlExecutor {
  query<R = Row>(sql: string, args?: readonly unknown[], options?: QueryOptions): Promise<R[]>;
  execute(sql: string, args?: readonly unknown[], options?: QueryOptions): Promise<number>;
}

export type DatabaseKind = 'pglite' | 'postgres';

/**
 * What a transaction does, which decides how long each of its statements may run on PostgreSQL
 * (`statement_timeout`): a request's write, bulk work (reindex, imports, clones, statistics), or
 * schema changes (migrations, unbounded).
 */
export type TransactionKind = 'write' | 'bulk' | 'schema';

/** The settings that bound statements on PostgreSQL (src/config.ts); 0 is no bound. */
export type StatementTimeouts = Pick<Config, 'statementTimeoutMs' | 'writeStatementTimeoutMs' | 'bulkStatementTimeoutMs'>;

/**
 * Where the resource store sends its statements: the database, or one transaction that several
 * writes join (a transaction Bundle). Work that would open a transaction joins the open one, and
 * what must only follow a commit (caches, notices to other servers) waits for it.
 */
export interface TransactionalSql extends SqlExecutor {
  readonly kind: DatabaseKind;
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>, kind?: TransactionKind): Promise<T>;
  /** Runs `effect` once the work is committed: at once on the database, at the end on a joined transaction. */
  afterCommit(effect: () => void): void;
  /** The transaction every statement joins, when there is one. */
  readonly joined?: SqlExecutor;
  /**
   * Tells this view that a statement sent through another executor committed a write made for it
   * (a group of creates, src/storage/create-batches.ts): a read-your-writes view marks the
   * caller's reads as its own writes would. Absent: nothing to mark.
   */
  noteWrite?(): Promise<void>;
}


/**
 * One pool, two speeds (DESIGN 3.2; docs/data-access.md). Both paths run on one driver adapter:
 * the same pool of connections on PostgreSQL (@prisma/adapter-pg), the same worker thread on the
 * embedded PGlite.
 *
 * - `db.prisma`, the generated Prisma client with its model types, for the everyday tables:
 *   server keys (auth/keys.ts), credentials read or written on their own (auth/accounts.ts),
 *   Binary bytes and metadata (storage/binary-storage.ts).
 * - `query`/`execute`/`transaction`, hand-written SQL on the adapter, for the hot and bulk paths
 *   and whatever must run inside a transaction: the resource store (read by id, a version with
 *   its index rows, search), the secret-hash read of each client_credentials token on
 *   PostgreSQL, the terminology tables (the revision read of each request, bulk concept writes,
 *   and lookups that also run inside write transactions: AccessPolicy criteria with `:in`), and
 *   every write that must commit with resource writes. A read by primary key through the adapter
 *   measured 2-3 times the requests per second of the same read through the Prisma client (see
 *   DESIGN 3.2 and bench/RESULTS.md).
 * - The migration runner (migrate.ts) is raw SQL too: it runs before the models' tables exist,
 *   and its bookkeeping table is not in the Prisma schema.
 *
 * Prisma calls never join a `transaction()`: they run outside it, on their own. On the embedded
 * database (one connection) a Prisma call made while a transaction is open waits for it to end, so
 * never await one inside the work of a transaction.
 */
export class Database implements TransactionalSql {
  /** Counts statements sent, by both paths; tests use it to assert query budgets, never timings. */
  statementCount = 0;
  /** The generated client for the everyday tables (see above), on this database's adapter. */
  readonly prisma: PrismaClient;

  private constructor(
    readonly kind: DatabaseKind,
    private readonly adapter: SqlDriverAdapter,
    private readonly closeDriver: () => Promise<void>,
    /** Connections whose statements PostgreSQL may plan once (QueryOptions.planOnce). */
    private readonly planOnceAdapter: SqlDriverAdapter = adapter,
    /**
     * The bounds on statements: PostgreSQL's statement_timeout; on the embedded database, whose
     * engine cannot cancel a statement, how long one outside a transaction may wait for the
     * connection (worker-adapter.ts).
     */
    private readonly timeouts?: StatementTimeouts,
    /** PostgreSQL's connection pools by name, for the metrics; none on the embedded database. */
    private readonly namedPools: ReadonlyMap<string, pg.Pool> = new Map(),
  ) {
    this.prisma = new PrismaClient({ adapter: sharedAdapter(adapter, this) });
  }

  static async open(
    config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databasePoolSize' | 'databasePreparedStatements'> & Partial<StatementTimeouts>,
  ): Promise<Database> {
    if (config.databaseUrl) {
      const prepared = config.databasePreparedStatements > 0;
      const pool = postgresPool(config, prepared ? 'force_custom_plan' : undefined);
      // Statements driven by a key are planned once per connection, on connections of their own:
      // plan_cache_mode is a connection setting, and switching it would cost a round trip.
      const planOncePool = prepared ? postgresPool(config, 'force_generic_plan') : undefined;
      const close = () => Promise.all([pool.end(), planOncePool?.end()]).then(() => undefined);
      const adapter = await new PrismaPg(pool).connect();
      const planOnceAdapter = planOncePool ? await new PrismaPg(planOncePool).connect() : undefined;
      const pools = new Map([['main', pool], ...(planOncePool ? [['plan_once', planOncePool] as const] : [])]);
      return new Database('postgres', adapter, close, planOnceAdapter ?? adapter, statementTimeouts(config), pools);
    }
    // PGlite cannot stop a statement, but one still waiting for its connection can be dropped.
    const timeouts = statementTimeouts(config);
    const worker = await WorkerSqlAdapter.start(config.dataDir, timeouts.statementTimeoutMs);
    return new Database('pglite', worker, () => worker.dispose(), worker, timeouts);
  }

  /** Each PostgreSQL pool's connections now (total, idle, and requests waiting for one). */
  poolUse(): { name: string; totalCount: number; idleCount: number; waitingCount: number }[] {
    return [...this.namedPools].map(([name, pool]) => ({ name, totalCount: pool.totalCount, idleCount: pool.idleCount, waitingCount: pool.waitingCount }));
  }

  query<R = Row>(sql: string, args: readonly unknown[] = [], options: QueryOptions = {}): Promise<R[]> {
    const { signal } = options;
    if (signal) return this.cancellableQuery<R>(signal, sql, args, options);
    this.statementCount++;
    const pool = options.pgValues ? (this.namedPools.get(options.planOnce ? 'plan_once' : 'main') ?? this.namedPools.get('main')) : undefined;
    if (pool) return runPgQuery<R>(pool, sql, args, this.timeouts?.statementTimeoutMs);
    return runQuery<R>(options.planOnce ? this.planOnceAdapter : this.adapter, sql, args, this.timeouts?.statementTimeoutMs);
  }

  /**
   * A read sent with its client's signal: on PostgreSQL its pool cancels it when the signal aborts
   * (cancellation.ts); on the embedded database, whose engine cannot stop a statement, it is
   * dropped while it still waits for the connection (worker-adapter.ts), and not sent once the
   * signal has aborted. Any failure after the abort is the client's going away.
   */
  private async cancellableQuery<R>(signal: AbortSignal, sql: string, args: readonly unknown[], options: QueryOptions): Promise<R[]> {
    if (signal.aborted) throw clientClosed();
    const plain = { planOnce: options.planOnce, pgValues: options.pgValues };
    // The pool the statement goes to either way (both paths share it: see query()).
    const pool = ((options.planOnce && this.namedPools.get('plan_once')) || this.namedPools.get('main')) as CancellablePool | undefined;
    const sending = pool ?? (this.adapter instanceof WorkerSqlAdapter ? this.adapter : undefined);
    try {
      return await (sending ? sending.sendWith(signal, () => this.query<R>(sql, args, plain)) : this.query<R>(sql, args, plain));
    } catch (error) {
      throw signal.aborted ? clientClosed() : error;
    }
  }

  execute(sql: string, args: readonly unknown[] = [], options: QueryOptions = {}): Promise<number> {
    this.statementCount++;
    const pool = options.pgValues ? (this.namedPools.get(options.planOnce ? 'plan_once' : 'main') ?? this.namedPools.get('main')) : undefined;
    if (pool) return runPgExecute(pool, sql, args, this.timeouts?.statementTimeoutMs);
    return runExecute(options.planOnce ? this.planOnceAdapter : this.adapter, sql, args, this.timeouts?.statementTimeoutMs);
  }

  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * Inside, use only the executor passed in (PGlite has one connection: a query on the outer
   * database would wait for this transaction forever).
   */
  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>, kind: TransactionKind = 'write'): Promise<T> {
    const timeoutMs = this.timeoutOf(kind);
    const tx = await this.begin(timeoutMs);
    const executor = new TransactionExecutor(tx, this, timeoutMs);
    let result: T;
    try {
      if (this.kind === 'postgres' && this.timeouts && timeoutMs !== this.timeouts.statementTimeoutMs) {
        await executor.execute(`SET LOCAL statement_timeout = ${timeoutMs}`);
      }
      result = await work(executor);
    } catch (error) {
      await finishTransaction(tx, 'ROLLBACK').catch(() => undefined);
      throw error;
    }
    await finishTransaction(tx, 'COMMIT');
    return result;
  }

  /**
   * A transaction. On the embedded database it waits for the one connection at most `timeoutMs`
   * (what bounds each of its statements on PostgreSQL; 0: as long as it takes), then answers as a
   * statement cancelled by its timeout (503 `timeout`, nothing of it having run).
   */
  private async begin(timeoutMs: number | undefined): Promise<Transaction> {
    if (!(this.adapter instanceof WorkerSqlAdapter)) return this.adapter.startTransaction();
    try {
      return await this.adapter.startTransactionWithin(timeoutMs ?? 0);
    } catch (error) {
      throw cancelledAsOutcome(error, timeoutMs);
    }
  }

  afterCommit(effect: () => void): void {
    effect();
  }

  /**
   * How long each statement of a transaction of `kind` may run. A request's writes keep the
   * connections' own setting when it is the same (the default), which costs no statement.
   */
  private timeoutOf(kind: TransactionKind): number | undefined {
    if (!this.timeouts) return undefined;
    if (kind === 'schema') return 0;
    return kind === 'bulk' ? this.timeouts.bulkStatementTimeoutMs : this.timeouts.writeStatementTimeoutMs;
  }

  async close(): Promise<void> {
    await this.prisma.$disconnect().catch(() => undefined);
    await this.closeDriver();
  }
}

/**
 * The adapter as the Prisma client gets it: the Database's own (no second pool or worker), its
 * statements counted with ours, and closing left to Database.close (Prisma's $disconnect would
 * otherwise stop the embedded database's worker).
 */
function sharedAdapter(adapter: SqlDriverAdapter, counter: { statementCount: number }): SqlDriverAdapterFactory {
  const counted = (queryable: SqlQueryable) => ({
    queryRaw(query: SqlQuery) {
      counter.statementCount++;
      return queryable.queryRaw(query);
    },
    executeRaw(query: SqlQuery) {
      counter.statementCount++;
      return queryable.executeRaw(query);
    },
  });
  const shared: SqlDriverAdapter = {
    provider: adapter.provider,
    adapterName: adapter.adapterName,
    ...counted(adapter),
    executeScript: (script) => adapter.executeScript(script),
    async startTransaction(isolationLevel) {
      const tx = await adapter.startTransaction(isolationLevel);
      return {
        provider: tx.provider,
        adapterName: tx.adapterName,
        options: tx.options,
        ...counted(tx),
        commit: () => tx.commit(),
        rollback: () => tx.rollback(),
      };
    },
    getConnectionInfo: adapter.getConnectionInfo && (() => adapter.getConnectionInfo!()),
    dispose: async () => undefined,
  };
  return { provider: adapter.provider, adapterName: adapter.adapterName, connect: async () => shared };
}

export type PlanCacheMode = 'force_custom_plan' | 'force_generic_plan';

/**
 * The planner settings of a pool's connections. A generic plan is kept for the connection's life,
 * and one made while the tables were still small (a new server's first searches) would keep the
 * sequential scans, or the bitmap scans that read every match before sorting them, that are
 * cheapest only then, whatever the tables grow to until statistics are refreshed. The statements
 * planned once are driven by a key or read an index in the page's order, the right start at any
 * size, so both are priced out of their plans (a penalty, not a ban: a statement with no other
 * path still runs).
 * JIT compilation is off on every pool: PostgreSQL compiles a statement whose estimated cost passes
 * jit_above_cost, and estimates made without statistics (or a penalty above) pass it for statements
 * that read a few hundred rows, whose compilation then cost tens of milliseconds each time they
 * ran (a member's chained search with AccessPolicy criteria, a super admin's chain for some of its
 * values: bench/RESULTS.md). Flint's statements read few rows by index; none gains from it.
 */
export function planSettings(planCacheMode: PlanCacheMode | undefined): string[] {
  const settings = ['-c jit=off'];
  if (!planCacheMode) return settings;
  settings.push(`-c plan_cache_mode=${planCacheMode}`);
  if (planCacheMode === 'force_generic_plan') settings.push('-c enable_seqscan=off', '-c enable_bitmapscan=off');
  return settings;
}

/**
 * A pool of PostgreSQL connections. With a plan cache mode, statements sent more than once are
 * prepared on each connection (prepared-statements.ts) and planned as the mode says.
 */
function postgresPool(
  config: Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'databasePreparedStatements'> & Partial<StatementTimeouts>,
  planCacheMode: PlanCacheMode | undefined,
): pg.Pool {
  // Reads and searches are bounded by the connections' own statement_timeout: no statement per request.
  const settings = [`-c statement_timeout=${statementTimeouts(config).statementTimeoutMs}`];
  settings.push(...planSettings(planCacheMode));
  return new CancellablePool({
    connectionString: config.databaseUrl,
    max: config.databasePoolSize,
    options: settings.join(' '),
    ...(planCacheMode && {
      Client: preparingClient(new StatementNames(), config.databasePreparedStatements),
      // New connections start with no prepared statements: what is frequent now gets prepared.
      maxLifetimeSeconds: 3600,
    }),
  });
}

/** The statement bounds of `config`, unbounded where it names none (scripts and tests that open a Database). */
function statementTimeouts(config: Partial<StatementTimeouts>): StatementTimeouts {
  return {
    statementTimeoutMs: config.statementTimeoutMs ?? 0,
    writeStatementTimeoutMs: config.writeStatementTimeoutMs ?? 0,
    bulkStatementTimeoutMs: config.bulkStatementTimeoutMs ?? 0,
  };
}

class TransactionExecutor implements SqlExecutor {
  constructor(
    private readonly tx: Transaction,
    private readonly counter: { statementCount: number },
    private readonly timeoutMs: number | undefined,
  ) {}

  query<R = Row>(sql: string, args: readonly unknown[] = []): Promise<R[]> {
    this.counter.statementCount++;
    return runQuery<R>(this.tx, sql, args, this.timeoutMs);
  }

  execute(sql: string, args: readonly unknown[] = []): Promise<number> {
    this.counter.statementCount++;
    return runExecute(this.tx, sql, args, this.timeoutMs);
  }
}

/** Some adapters expect the caller to send COMMIT/ROLLBACK itself ("phantom" queries are theirs). */
async function finishTransaction(tx: Transaction, statement: 'COMMIT' | 'ROLLBACK'): Promise<void> {
  if (!tx.options.usePhantomQuery) {
    try {
      await tx.executeRaw({ sql: statement, args: [], argTypes: [] });
    } catch (error) {
      await tx.rollback().catch(() => undefined);
      throw error;
    }
  }
  if (statement === 'COMMIT') await tx.commit();
  else await tx.rollback();
}

async function runQuery<R>(queryable: SqlQueryable, sql: string, args: readonly unknown[], timeoutMs: number | undefined): Promise<R[]> {
  let result;
  try {
    result = await queryable.queryRaw({ sql, args: [...args], argTypes: args.map(argTypeOf) });
  } catch (error) {
    throw cancelledAsOutcome(error, timeoutMs);
  }
  const names = result.columnNames;
  return result.rows.map((values) => {
    const row: Row = {};
    for (let i = 0; i < names.length; i++) row[names[i]] = values[i];
    return row as R;
  });
}

async function runPgQuery<R>(pool: pg.Pool, sql: string, args: readonly unknown[], timeoutMs: number | undefined): Promise<R[]> {
  try {
    return (await pool.query({ text: sql, values: args as unknown[] })).rows as R[];
  } catch (error) {
    throw cancelledAsOutcome(error, timeoutMs);
  }
}

async function runPgExecute(pool: pg.Pool, sql: string, args: readonly unknown[], timeoutMs: number | undefined): Promise<number> {
  try {
    return (await pool.query({ text: sql, values: args as unknown[] })).rowCount ?? 0;
  } catch (error) {
    throw cancelledAsOutcome(error, timeoutMs);
  }
}

async function runExecute(queryable: SqlQueryable, sql: string, args: readonly unknown[], timeoutMs: number | undefined): Promise<number> {
  try {
    return await queryable.executeRaw({ sql, args: [...args], argTypes: args.map(argTypeOf) });
  } catch (error) {
    throw cancelledAsOutcome(error, timeoutMs);
  }
}

/** PostgreSQL's `query_canceled`: a statement stopped by statement_timeout (or by an administrator). */
const QUERY_CANCELED = '57014';

/**
 * A statement PostgreSQL cancelled becomes a 503 `timeout` the client may retry later (its
 * transaction is rolled back by its owner): the server cannot tell a statement slowed by load from
 * one too costly by itself, and a retry when the server is quieter may succeed. Other errors pass.
 */
function cancelledAsOutcome(error: unknown, timeoutMs: number | undefined): unknown {
  // The Prisma adapter's error names PostgreSQL's code in its cause, pg's own in `code`.
  const failure = error as { code?: unknown; cause?: { originalCode?: unknown } } | undefined;
  if (failure?.cause?.originalCode !== QUERY_CANCELED && failure?.code !== QUERY_CANCELED) return error;
  const bound = timeoutMs ? ` (${timeoutMs} ms)` : '';
  return errors.unavailable(
    'timeout',
    `The database did not finish this request within the time the server allows${bound}. Retry later; a search can be made cheaper with more selective parameters or a smaller _count.`,
    Math.max(1, Math.ceil((timeoutMs ?? 1000) / 1000)),
  );
}

function argTypeOf(value: unknown): ArgType {
  switch (typeof value) {
    case 'string':
      return { scalarType: 'string', arity: 'scalar' };
    case 'number':
      return { scalarType: Number.isInteger(value) ? 'int' : 'float', arity: 'scalar' };
    case 'bigint':
      return { scalarType: 'bigint', arity: 'scalar' };
    case 'boolean':
      return { scalarType: 'boolean', arity: 'scalar' };
    default:
      if (value instanceof Uint8Array) return { scalarType: 'bytes', arity: 'scalar' };
      if (Array.isArray(value)) return { scalarType: 'unknown', arity: 'list' };
      return { scalarType: 'unknown', arity: 'scalar' };
  }
}

/**
 * A UTC timestamp as the adapters return it: `2026-01-02T03:04:05.123456+00:00` (PostgreSQL) or
 * `2026-01-02 03:04:05.123456` (PGlite, UTC without offset).
 */
const UTC_TIMESTAMP = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(?:[zZ]|\+00:?00)?$/;

/** Reads a timestamptz column value as an ISO instant, whatever form the adapter returned. */
export function toInstant(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  const text = String(value);
  // PostgreSQL's form by position (~200 per GraphQL page; cheaper than the regular expression,
  // measured: see bench/RESULTS.md).
  if (text.length >= 25 && text.length <= 32 && text.endsWith('+00:00') && text.charCodeAt(10) === 84 /* T */) {
    if (text.length === 25) return `${text.slice(0, 19)}.000Z`;
    if (text.charCodeAt(19) === 46 /* . */) return `${text.slice(0, 20)}${text.slice(20, Math.min(23, text.length - 6)).padEnd(3, '0')}Z`;
  }
  // The database's forms by string operations, as Date gives them (milliseconds, truncated):
  // parsing a Date for each row is a noticeable share of a page of 100 resources read by GraphQL
  // (measured: see bench/RESULTS.md).
  const utc = UTC_TIMESTAMP.exec(text);
  if (utc) return `${utc[1]}T${utc[2]}.${(utc[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
  const date = new Date(/[zZ]|[+-]\d\d(:?\d\d)?$/.test(text) ? text.replace(' ', 'T') : `${text.replace(' ', 'T')}Z`);
  return date.toISOString();
}
