import type { Config } from './config/types.js';
import { ConfigError, definedOnly, jobQueue, namespace, parseProviders, readConfigFile, type Env } from './config/values.js';

/**
 * The one configuration module: everything reads its configuration through `loadConfig`, and the
 * types from here. Its parts: src/config/types.ts (the Config shape), src/config/values.ts (the
 * file, the error, values with rules of their own).
 */
export type { Config, ExternalAuthProvider } from './config/types.js';
export { ConfigError } from './config/values.js';

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

  const percent = (name: string, fallback: number): number => {
    const value = int(name, fallback, 1);
    if (value <= 100) return value;
    problems.push(`${name} must be an integer from 1 to 100, got "${merged[name]}"`);
    return fallback;
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
    searchReadAhead: oneOf('SEARCH_READ_AHEAD', ['true', 'false'] as const, 'true') === 'true',
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
    statisticsVacuum: oneOf('STATISTICS_VACUUM', ['on', 'off'] as const, 'on') === 'on',
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
    subscriptionBusySharePercent: percent('SUBSCRIPTION_BUSY_SHARE_PERCENT', 20),
    subscriptionBusyMaxMs: int('SUBSCRIPTION_BUSY_MAX_MS', 10_000),
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
