/**
 * The shape of the server's configuration, read by `loadConfig` (src/config.ts, the one entry
 * point: import from there). Each key's variable, default and bounds are in src/config.ts.
 */

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
  /** Whether the next page of a walk by cursor is read ahead while the client reads the last (src/http/read-ahead.ts). */
  readonly searchReadAhead: boolean;
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
  /** PostgreSQL: whether those rounds also VACUUM a search table whose pages are mostly not all-visible (db/postgres-vacuum.ts). */
  readonly statisticsVacuum: boolean;
  /**
   * PostgreSQL `statement_timeout` of reads, history, searches and GraphQL queries: every statement
   * outside a transaction (the connections' own setting). 0: none. Cancelled: 503 `timeout`.
   */
  readonly statementTimeoutMs: number;
  /**
   * PostgreSQL `statement_timeout` of the statements of a write's transaction; on the embedded
   * database, how long the transaction may wait for its connection to begin. 0: none.
   */
  readonly writeStatementTimeoutMs: number;
  /** As writeStatementTimeoutMs, for the transactions of bulk work: reindex, imports, project clones, statistics. 0: none. */
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
  /**
   * Subscriptions: the share of time (percent) deliveries may take while the server has requests
   * in flight; they take all of it when it has none. 100: deliveries never yield.
   */
  readonly subscriptionBusySharePercent: number;
  /**
   * Subscriptions: how long deliveries keep yielding to requests while they stay behind the
   * writes; then they compete with requests as equals until they catch up.
   */
  readonly subscriptionBusyMaxMs: number;
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
