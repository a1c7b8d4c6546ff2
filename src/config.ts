import { readFileSync } from 'node:fs';

/** One external identity provider whose JWTs `/oauth2/userinfo` accepts (SPEC 2.6). */
export interface ExternalAuthProvider {
  readonly issuer: string;
  readonly userInfoUrl: string;
}

/** Server configuration: parsed once at start, frozen, passed down (never read from globals). */
export interface Config {
  readonly port: number;
  readonly baseUrl: string;
  readonly fhirBaseUrl: string;
  readonly databaseUrl: string | undefined;
  /** PostgreSQL streaming replicas that serve reads (docs/replicas.md); empty: every read goes to the primary. */
  readonly databaseReadUrls: readonly string[];
  /** Replicas: a replica more than this far behind the primary (in time) is skipped; reads go to the primary. */
  readonly databaseReadMaxLagMs: number;
  /** Replicas: how often each server reads the primary's WAL position and each replica's replayed one. */
  readonly databaseReadPollMs: number;
  readonly dataDir: string;
  readonly databasePoolSize: number;
  /**
   * Statements of plain creates one server runs at once; creates arriving meanwhile are written
   * together by the next one, in one commit (src/storage/create-batches.ts). 0 writes each alone.
   */
  readonly createGroupsInFlight: number;
  /** PostgreSQL: statements prepared (parsed once, planned per execution) per connection; 0 prepares none. */
  readonly databasePreparedStatements: number;
  /** Server processes sharing the port (Node cluster); more than one needs PostgreSQL. */
  readonly workers: number;
  readonly maxBodyBytes: number;
  /** Most operations one JSON Patch may hold (400 above); its result is bounded by maxBodyBytes. */
  readonly maxPatchOperations: number;
  /** Most entries a batch or transaction Bundle may hold (413 above). */
  readonly maxBundleEntries: number;
  /** Most resources one `$set-accounts` call may update, its target included (400 above): it runs in one transaction. */
  readonly setAccountsMaxResources: number;
  /**
   * Most entries of a transaction on the embedded database, whose one connection the transaction
   * holds (every other request waits for it) until it commits.
   */
  readonly embeddedTransactionEntries: number;
  readonly superAdminEmail: string;
  readonly superAdminPassword: string | undefined;
  readonly superAdminClientId: string | undefined;
  readonly superAdminClientSecret: string | undefined;
  readonly externalAuthProviders: readonly ExternalAuthProvider[];
  readonly accurateCountThreshold: number;
  /** `_total=accurate` when the estimate reaches the threshold: return the estimate, or refuse (400). */
  readonly accurateCountOverThreshold: 'estimate' | 'refuse';
  /** Search: the longest value (each OR value of a parameter) and parameter name, in characters (400 too-long above). */
  readonly searchMaxValueLength: number;
  /** Search: the most parameters one search may give, result control included (400 too-costly above). */
  readonly searchMaxParameters: number;
  /** Search: the most values one search may give, counting each OR value of each parameter (400 too-costly above). */
  readonly searchMaxOrValues: number;
  /** Sign-in and token requests: the longest field (email, password, scope, token...), in characters (400 invalid_request above). */
  readonly authMaxFieldLength: number;
  /** Self sign-up (`/auth/newuser`, `/auth/newproject`): anyone may make a user and a project of their own. */
  readonly allowSignUp: boolean;
  /** ClientApplication/$rotate-secret: how long the previous secret keeps working after a rotation. */
  readonly clientSecretGraceMs: number;
  readonly redisUrl: string | undefined;
  /**
   * Names the cache-notice channel (PostgreSQL and Redis) and the Redis key prefix: the servers of
   * one deployment share it; two deployments sharing a Redis (or test servers sharing a database)
   * must not.
   */
  readonly cacheNamespace: string;
  readonly logLevel: string;
  readonly shutdownTimeoutMs: number;
  /**
   * Longest a response may go without the client taking any of it (a client that never reads):
   * the connection is then closed and what was left to send is dropped.
   */
  readonly sendTimeoutMs: number;
  /** Longest a client may take to send a request's headers (Node's `headersTimeout`): 408, closed. */
  readonly headersTimeoutMs: number;
  /** Longest a client may take to send a whole request, headers and body (Node's `requestTimeout`): 408, closed. */
  readonly requestTimeoutMs: number;
  readonly resourceCacheSize: number;
  /** Origins browsers may call from (CORS); `*` allows any. */
  readonly corsOrigins: readonly string[];
  /** GraphQL: deepest field nesting a query may have (introspection fields not counted). */
  readonly graphqlMaxDepth: number;
  /** GraphQL: highest estimated cost of a query, list fields multiplying their subtree (src/graphql/limits.ts). */
  readonly graphqlMaxCost: number;
  /** GraphQL: the largest `_count` a list field may ask for. */
  readonly graphqlMaxListSize: number;
  /** GraphQL: whether clients may query the schema (`__schema`, `__type`); GraphiQL needs it. */
  readonly graphqlIntrospection: boolean;
  /** GraphQL: most lexical tokens a query document may have (refused before it is parsed). */
  readonly graphqlMaxTokens: number;
  /**
   * GraphQL: deepest nesting of braces, brackets and parentheses in a query document (selections,
   * input objects, list literals) and of objects and arrays in its variables.
   */
  readonly graphqlMaxNesting: number;
  /** GraphQL: most operation fields (`ValueSetExpand`, `CodeSystemLookup`, ...) one query may hold, aliases included. */
  readonly graphqlMaxOperationFields: number;
  /** ValueSet/$expand: most codes one expansion may list; a larger one must be paged with `count` and `offset`. */
  readonly expandMaxCodes: number;
  /**
   * Jobs (docs/jobs.md): how long a running job's lease lasts (renewed every quarter of it by the
   * server running it); a job whose lease has passed is resumed by any server from its last checkpoint.
   */
  readonly asyncJobStaleMs: number;
  /** The job queue (src/operations/jobs, docs/jobs.md). */
  readonly jobs: {
    /** Runs of one job (retries after transient failures, resumes after its server stopped) before it is `error`. */
    readonly maxAttempts: number;
    /** How often each server looks for queued jobs (a job queued on this server is claimed at once). */
    readonly pollMs: number;
    /** Jobs one server runs at the same time. */
    readonly concurrency: number;
    /** Wait before the first retry; doubled for each further one (at most a minute). */
    readonly retryBaseMs: number;
    /**
     * The queue this server puts its jobs in and claims jobs from (and sweeps the ended exports of):
     * servers of one database share jobs only within a queue. Every server the same (`default`)
     * unless configured; the tests give each server its own (docs/jobs.md).
     */
    readonly queue: string;
  };
  /** Bulk data export (src/bulk, docs/bulk-data.md): most resources in one NDJSON file. */
  readonly exportFileMaxResources: number;
  /** How long an ended export's files, manifest and AsyncJob are kept before any server removes them. */
  readonly exportFileTtlMs: number;
  /** PostgreSQL: how often one server analyzes the search tables that changed enough since their last ANALYZE (0: never). */
  readonly statisticsIntervalMs: number;
  /**
   * PostgreSQL `statement_timeout` of reads, history, searches and GraphQL queries: every statement
   * outside a transaction (the connections' own setting). 0: none. Cancelled: 503 `timeout`.
   */
  readonly statementTimeoutMs: number;
  /** PostgreSQL `statement_timeout` of the statements of a write's transaction. 0: none. */
  readonly writeStatementTimeoutMs: number;
  /** PostgreSQL `statement_timeout` of the transactions of bulk work: reindex, imports, project clones, statistics. 0: none. */
  readonly bulkStatementTimeoutMs: number;
  /** Admission: most requests one server process works on at once; more wait in their project's queue. */
  readonly admissionMaxInWork: number;
  /** Admission: most requests waiting, all projects together (503 above, the longest queue giving way). */
  readonly admissionMaxQueued: number;
  /** Admission: most requests of one project waiting (503 above). */
  readonly admissionMaxQueuedPerProject: number;
  /** Admission: longest a request waits for its turn before it is answered 503. */
  readonly admissionMaxWaitMs: number;
  /** `GET /metrics` on the server's port, for a scrape that sends this bearer token; unset: not served there. */
  readonly metricsToken: string | undefined;
  /** `/metrics` on a port of its own (all workers added up with WORKERS); 0 picks a free one; unset: none. */
  readonly metricsPort: number | undefined;
  /** Subscriptions: longest one delivery attempt may wait for the receiver's answer. */
  readonly subscriptionTimeoutMs: number;
  /** Subscriptions: wait before the second attempt of a delivery, doubled for each attempt after it. */
  readonly subscriptionRetryBaseMs: number;
  /** Subscriptions: how often each server looks for due deliveries it was not told of (other servers' leases that passed). */
  readonly subscriptionPollMs: number;
  /** Subscriptions: most deliveries one server makes at once. */
  readonly subscriptionConcurrency: number;
  /** WebSocket subscriptions: most sockets one server process holds, bound or not. */
  readonly wsMaxConnections: number;
  /** WebSocket subscriptions: most sockets one project holds on one server process. */
  readonly wsMaxConnectionsPerProject: number;
  /** WebSocket subscriptions: most Subscriptions one socket may be bound to. */
  readonly wsMaxBindingsPerSocket: number;
  /** WebSocket subscriptions: largest message a client may send, in bytes. */
  readonly wsMaxMessageBytes: number;
  /** WebSocket subscriptions: a socket without a binding this long after it opened is closed. */
  readonly wsBindTimeoutMs: number;
  /** WebSocket subscriptions: a socket that sends nothing (no message, no pong) this long is closed. */
  readonly wsIdleTimeoutMs: number;
  /** WebSocket subscriptions: interval of the `heartbeat` Bundles sent for each bound Subscription; 0 sends none. */
  readonly wsHeartbeatMs: number;
  /** WebSocket subscriptions: lifetime of a `$get-ws-binding-token` token. */
  readonly wsBindingTokenSeconds: number;
  /** Whether rest-hook endpoints and bots' fetch may reach loopback, private or link-local addresses (refused by default). */
  readonly outboundAllowPrivateAddresses: boolean;
  /** Bots: worker threads that run bots, one bot at a time each (docs/bots.md). */
  readonly botWorkers: number;
  /** Bots: memory one run may allocate inside its sandbox, in MB. */
  readonly botMemoryMb: number;
  /** Bots: longest one run may take when its Bot sets no `timeout` (seconds there), in ms. */
  readonly botTimeoutMs: number;
  /** Bots: who may fetch outside the server: `*`, `Project/<id>` or `Bot/<id>` entries; empty: nobody. */
  readonly botFetchAllowed: readonly string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n- ${problems.join('\n- ')}`);
  }
}

type Env = Record<string, string | undefined>;

/**
 * Reads configuration from the environment, with an optional JSON file (`FLINT_CONFIG`) whose keys
 * are the same variable names. The environment wins over the file. Every problem is reported at once.
 */
export function loadConfig(env: Env = process.env): Config {
  const merged: Env = { ...readConfigFile(env.FLINT_CONFIG), ...definedOnly(env) };
  const problems: string[] = [];
  const int = (name: string, fallback: number, min = 0): number => {
    const raw = merged[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      problems.push(`${name} must be an integer >= ${min}, got "${raw}"`);
      return fallback;
    }
    return value;
  };

  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = merged[name];
    if (raw === undefined || raw === '') return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
    return fallback;
  };

  const port = int('PORT', 8080);
  const rawBase = merged.BASE_URL || `http://localhost:${port}/`;
  let baseUrl = rawBase.endsWith('/') ? rawBase : `${rawBase}/`;
  try {
    new URL(baseUrl);
  } catch {
    problems.push(`BASE_URL must be an absolute URL, got "${rawBase}"`);
    baseUrl = `http://localhost:${port}/`;
  }

  const databaseUrl = merged.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// or postgresql://');
  }

  const poolSize = int('DATABASE_POOL_SIZE', 10, 1);
  const databaseReadUrls = (merged.DATABASE_READ_URL || '').split(',').map((url) => url.trim()).filter(Boolean);
  if (databaseReadUrls.length > 0 && !databaseUrl) {
    problems.push('DATABASE_READ_URL needs DATABASE_URL: read replicas are PostgreSQL replicas of a PostgreSQL primary, and the embedded database has none');
  }
  for (const url of databaseReadUrls) {
    if (!/^postgres(ql)?:\/\//.test(url)) problems.push(`DATABASE_READ_URL: each URL must start with postgres:// or postgresql://, got "${url}"`);
  }

  const config: Config = {
    port,
    baseUrl,
    fhirBaseUrl: `${baseUrl}fhir/R4`,
    databaseUrl,
    databaseReadUrls,
    databaseReadMaxLagMs: int('DATABASE_READ_MAX_LAG_MS', 5_000, 1),
    databaseReadPollMs: int('DATABASE_READ_POLL_MS', 100, 10),
    dataDir: merged.DATA_DIR || './data',
    databasePoolSize: poolSize,
    createGroupsInFlight: int('CREATE_GROUPS_IN_FLIGHT', Math.max(1, Math.floor(poolSize / 2))),
    databasePreparedStatements: int('DATABASE_PREPARED_STATEMENTS', 256),
    workers: int('WORKERS', 1, 1),
    maxBodyBytes: int('MAX_BODY_BYTES', 16 * 1024 * 1024, 1024),
    maxPatchOperations: int('MAX_PATCH_OPERATIONS', 1000, 1),
    maxBundleEntries: int('MAX_BUNDLE_ENTRIES', 10_000, 1),
    setAccountsMaxResources: int('SET_ACCOUNTS_MAX_RESOURCES', 1000, 1),
    embeddedTransactionEntries: int('EMBEDDED_TRANSACTION_ENTRIES', 1000, 1),
    superAdminEmail: merged.SUPER_ADMIN_EMAIL || 'admin@example.com',
    superAdminPassword: merged.SUPER_ADMIN_PASSWORD || undefined,
    superAdminClientId: merged.SUPER_ADMIN_CLIENT_ID || undefined,
    superAdminClientSecret: merged.SUPER_ADMIN_CLIENT_SECRET || undefined,
    externalAuthProviders: parseProviders(merged.EXTERNAL_AUTH_PROVIDERS, problems),
    accurateCountThreshold: int('ACCURATE_COUNT_THRESHOLD', 1_000_000),
    accurateCountOverThreshold: oneOf('ACCURATE_COUNT_OVER_THRESHOLD', ['estimate', 'refuse'] as const, 'estimate'),
    searchMaxValueLength: int('SEARCH_MAX_VALUE_LENGTH', 4096, 1),
    searchMaxParameters: int('SEARCH_MAX_PARAMETERS', 100, 1),
    searchMaxOrValues: int('SEARCH_MAX_OR_VALUES', 1000, 1),
    authMaxFieldLength: int('AUTH_MAX_FIELD_LENGTH', 8192, 256),
    allowSignUp: oneOf('ALLOW_SIGN_UP', ['true', 'false'] as const, 'false') === 'true',
    clientSecretGraceMs: int('CLIENT_SECRET_GRACE_MS', 24 * 60 * 60 * 1000),
    redisUrl: merged.REDIS_URL || undefined,
    cacheNamespace: namespace(merged.CACHE_NAMESPACE, problems),
    logLevel: merged.LOG_LEVEL || 'info',
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000),
    sendTimeoutMs: int('SEND_TIMEOUT_MS', 30_000, 100),
    headersTimeoutMs: int('HEADERS_TIMEOUT_MS', 20_000, 100),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 300_000, 100),
    resourceCacheSize: int('RESOURCE_CACHE_SIZE', 10_000),
    corsOrigins: (merged.CORS_ORIGINS || '*').split(',').map((origin) => origin.trim()).filter(Boolean),
    graphqlMaxDepth: int('GRAPHQL_MAX_DEPTH', 15, 1),
    graphqlMaxCost: int('GRAPHQL_MAX_COST', 50_000, 1),
    graphqlMaxListSize: int('GRAPHQL_MAX_LIST_SIZE', 1000, 1),
    graphqlIntrospection: oneOf('GRAPHQL_INTROSPECTION', ['true', 'false'] as const, 'true') === 'true',
    graphqlMaxTokens: int('GRAPHQL_MAX_TOKENS', 10_000, 100),
    graphqlMaxNesting: int('GRAPHQL_MAX_NESTING', 100, 10),
    graphqlMaxOperationFields: int('GRAPHQL_MAX_OPERATION_FIELDS', 10, 1),
    expandMaxCodes: int('EXPAND_MAX_CODES', 10_000, 1),
    asyncJobStaleMs: int('ASYNC_JOB_STALE_MS', 60_000, 1000),
    jobs: {
      maxAttempts: int('JOB_MAX_ATTEMPTS', 5, 1),
      pollMs: int('JOB_POLL_MS', 1_000, 50),
      concurrency: int('JOB_CONCURRENCY', 2, 1),
      retryBaseMs: int('JOB_RETRY_BASE_MS', 1_000, 0),
      queue: jobQueue(merged.JOB_QUEUE, problems),
    },
    exportFileMaxResources: int('EXPORT_FILE_MAX_RESOURCES', 100_000, 1),
    exportFileTtlMs: int('EXPORT_FILE_TTL_MS', 24 * 60 * 60 * 1000, 1),
    statisticsIntervalMs: int('STATISTICS_INTERVAL_MS', 60_000),
    statementTimeoutMs: int('STATEMENT_TIMEOUT_MS', 10_000),
    writeStatementTimeoutMs: int('WRITE_STATEMENT_TIMEOUT_MS', 10_000),
    bulkStatementTimeoutMs: int('BULK_STATEMENT_TIMEOUT_MS', 600_000),
    admissionMaxInWork: int('ADMISSION_MAX_IN_WORK', 2 * poolSize, 1),
    admissionMaxQueued: int('ADMISSION_MAX_QUEUED', 32 * poolSize, 1),
    admissionMaxQueuedPerProject: int('ADMISSION_MAX_QUEUED_PER_PROJECT', 8 * poolSize, 1),
    admissionMaxWaitMs: int('ADMISSION_MAX_WAIT_MS', 5_000, 1),
    metricsToken: merged.METRICS_TOKEN || undefined,
    metricsPort: merged.METRICS_PORT ? int('METRICS_PORT', 0) : undefined,
    subscriptionTimeoutMs: int('SUBSCRIPTION_TIMEOUT_MS', 30_000, 10),
    subscriptionRetryBaseMs: int('SUBSCRIPTION_RETRY_BASE_MS', 1_000, 1),
    subscriptionPollMs: int('SUBSCRIPTION_POLL_MS', 1_000, 10),
    subscriptionConcurrency: int('SUBSCRIPTION_CONCURRENCY', 32, 1),
    wsMaxConnections: int('WS_MAX_CONNECTIONS', 1_000, 1),
    wsMaxConnectionsPerProject: int('WS_MAX_CONNECTIONS_PER_PROJECT', 100, 1),
    wsMaxBindingsPerSocket: int('WS_MAX_BINDINGS_PER_SOCKET', 50, 1),
    wsMaxMessageBytes: int('WS_MAX_MESSAGE_BYTES', 16_384, 256),
    wsBindTimeoutMs: int('WS_BIND_TIMEOUT_MS', 10_000, 10),
    wsIdleTimeoutMs: int('WS_IDLE_TIMEOUT_MS', 60_000, 100),
    wsHeartbeatMs: int('WS_HEARTBEAT_MS', 10_000, 0),
    wsBindingTokenSeconds: int('WS_BINDING_TOKEN_SECONDS', 300, 1),
    outboundAllowPrivateAddresses: oneOf('OUTBOUND_ALLOW_PRIVATE_ADDRESSES', ['true', 'false'] as const, 'false') === 'true',
    botWorkers: int('BOT_WORKERS', 2, 1),
    botMemoryMb: int('BOT_MEMORY_MB', 128, 8),
    botTimeoutMs: int('BOT_TIMEOUT_MS', 10_000, 100),
    botFetchAllowed: (merged.BOT_FETCH_ALLOWED || '').split(',').map((entry) => entry.trim()).filter(Boolean),
  };
  for (const entry of config.botFetchAllowed) {
    if (entry !== '*' && !/^(Project|Bot)\/[A-Za-z0-9\-.]{1,64}$/.test(entry)) problems.push(`BOT_FETCH_ALLOWED: each entry must be *, Project/<id> or Bot/<id>, got "${entry}"`);
  }
  if (config.superAdminClientId !== undefined && !/^[A-Za-z0-9\-.]{1,64}$/.test(config.superAdminClientId)) {
    problems.push('SUPER_ADMIN_CLIENT_ID must be 1-64 of A-Z a-z 0-9 - . (it is the ClientApplication id)');
  }
  if ((config.superAdminClientId === undefined) !== (config.superAdminClientSecret === undefined)) {
    problems.push('SUPER_ADMIN_CLIENT_ID and SUPER_ADMIN_CLIENT_SECRET must be set together');
  }
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    problems.push('HEADERS_TIMEOUT_MS must not be above REQUEST_TIMEOUT_MS: the headers are part of the request');
  }
  if (config.workers > 1 && !config.databaseUrl) {
    problems.push('WORKERS above 1 needs DATABASE_URL: the embedded database belongs to one process');
  }
  if (config.metricsToken !== undefined && config.metricsToken.length < 16) {
    problems.push('METRICS_TOKEN must be at least 16 characters: it guards per-route request counts');
  }
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    problems.push('METRICS_PORT must differ from PORT (metrics on the server port need METRICS_TOKEN instead)');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

function definedOnly(env: Env): Env {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));
}

function readConfigFile(path: string | undefined): Env {
  if (!path) return {};
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([`${path} must hold a JSON object of variable names to values`]);
  }
  return Object.fromEntries(
    Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
}

function parseProviders(raw: string | undefined, problems: string[]): ExternalAuthProvider[] {
  if (!raw) return [];
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    problems.push('EXTERNAL_AUTH_PROVIDERS must be a JSON array');
    return [];
  }
  if (!Array.isArray(value)) {
    problems.push('EXTERNAL_AUTH_PROVIDERS must be a JSON array');
    return [];
  }
  return value.flatMap((p: unknown, i) => {
    const entry = p as Partial<ExternalAuthProvider> | null;
    if (!entry || typeof entry.issuer !== 'string' || typeof entry.userInfoUrl !== 'string') {
      problems.push(`EXTERNAL_AUTH_PROVIDERS[${i}] needs string "issuer" and "userInfoUrl"`);
      return [];
    }
    return [{ issuer: entry.issuer, userInfoUrl: entry.userInfoUrl }];
  });
}

/** CACHE_NAMESPACE: lower-case letters, digits and `_` (it becomes part of a PostgreSQL channel name). */
function namespace(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw === '') return 'flint';
  if (/^[a-z0-9_]{1,40}$/.test(raw)) return raw;
  problems.push(`CACHE_NAMESPACE must be 1-40 lower-case letters, digits or _, got "${raw}"`);
  return 'flint';
}

/** JOB_QUEUE: letters, digits and `_ . : -`, as a job row stores it. */
function jobQueue(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw === '') return 'default';
  if (/^[A-Za-z0-9_.:-]{1,64}$/.test(raw)) return raw;
  problems.push(`JOB_QUEUE must be 1-64 letters, digits or _ . : -, got "${raw}"`);
  return 'default';
}
