import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { LogBlocks } from './http/log-blocks.js';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';
import cluster from 'node:cluster';
import type { Registry } from 'prom-client';
import type { Services } from './operations/context.js';
import { countUnfinishedJobs, watchAsyncJobs } from './admin/async-job.js';
import { createRequestContext } from './access/context.js';
import { MemberViewers } from './access/member-viewers.js';
import { startJobWorker } from './operations/jobs/worker.js';
import { startExportExpiry } from './bulk/export-expiry.js';
import { Admission } from './http/admission.js';
import { listenMetrics } from './http/metrics/endpoint.js';
import { ServerMetrics, type MetricsExposition, type MetricsSources } from './http/metrics/server-metrics.js';
import { workerExposition } from './workers.js';
import { registerBuiltins } from './builtins.js';
import { bootstrapSuperAdmin } from './auth/bootstrap.js';
import { AuthService } from './auth/service.js';
import { openInvalidationBus, type InvalidationBus } from './cache/invalidation.js';
import { RedisStore, type SharedStore } from './cache/shared-store.js';
import { watchSearchParameters } from './indexing/parameters.js';
import { watchBotCode } from './storage/bot-code.js';
import { watchProfiles } from './validation/profiles/project-profiles.js';
import { Database } from './db/database.js';
import { ReplicaSet } from './db/replicas.js';
import { ReadYourWrites } from './cache/read-your-writes.js';
import { migrate } from './db/migrate.js';
import { PostgresStatistics } from './db/postgres-statistics.js';
import { pgVacuumSession } from './db/postgres-vacuum.js';
import { createHttpHandlers } from './http/app.js';
import { ReadAhead } from './http/read-ahead.js';
import { BotRunner } from './bots/runner.js';
import { routeBotCall } from './router/bot-calls.js';
import { fhirRouter } from './router/router.js';
import type { Identity } from './identity/identity.js';
import type { BotApi } from './bots/host-calls.js';
import type { RequestContext } from './operations/context.js';
import { createGraphQLHandler, type GraphQLHandler } from './graphql/yoga.js';
import { listenHttp } from './http/transport.js';
import { CreateBatches } from './storage/create-batches.js';
import { DatabaseBinaryStorage } from './storage/binary-storage.js';
import { LruResourceCache, noResourceCache } from './storage/resource-cache.js';

/** Creates one grouped statement writes at most: beyond, the next statement takes the rest. */
const MAX_CREATES_PER_GROUP = 100;
import { SearchCache } from './cache/search-cache.js';
import { startEvents } from './events/start.js';
import { serveWebSockets } from './events/websocket/endpoint.js';
import { restHookRequest, type AttemptResult } from './events/rest-hook.js';
import type { BotDelivery } from './events/worker.js';
import { valueBody } from './router/request-body.js';

export interface RunningServer {
  readonly url: string;
  /** `/metrics` on METRICS_PORT, when this process serves it. */
  readonly metricsUrl?: string;
  readonly services: Services;
  /** Stops accepting connections, waits for in-flight requests, then closes the pool. */
  close(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
}

/** How long a log line may wait in the buffer of stdout at most. */
const LOG_FLUSH_MS = 1000;

/**
 * The server's log on stdout, written in blocks of 16 KB (or every LOG_FLUSH_MS) instead of one
 * system call per line: the request line of every request was a sizeable share of a read's CPU
 * (docs/benchmarks.md). Lines are gathered into blocks before pino's destination sees them
 * (log-blocks.ts), which writes each block at once. What is buffered is written when the process
 * exits, also on an uncaught error; only a process killed outright (SIGKILL) loses up to
 * LOG_FLUSH_MS of lines.
 */
function serverLogger(level: string): Logger {
  return pino({ level }, new LogBlocks(pino.destination({ dest: 1, sync: false }), LOG_BLOCK_CHARS, LOG_FLUSH_MS));
}

/** Characters of log lines gathered before they are written (about 80 request lines). */
const LOG_BLOCK_CHARS = 16_384;

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  registerBuiltins();
  const log = options.log ?? serverLogger(config.logLevel);
  const db = await Database.open(config);
  try {
    const applied = await migrate(db, log);
    if (applied.length > 0) log.info({ applied }, 'database migrated');
  } catch (error) {
    await db.close();
    throw error;
  }
  let bus: InvalidationBus;
  try {
    bus = await openInvalidationBus(
      { redisUrl: config.redisUrl, namespace: config.cacheNamespace, postgresUrl: db.kind === 'postgres' ? config.databaseUrl : undefined },
      log,
    );
  } catch (error) {
    await db.close();
    throw error;
  }
  let store: SharedStore | undefined;
  try {
    store = config.redisUrl ? await RedisStore.open(config.redisUrl, config.cacheNamespace, log) : undefined;
  } catch (error) {
    await Promise.all([bus.close(), db.close()]);
    throw error;
  }
  let replicas: ReplicaSet | undefined;
  try {
    replicas = await openReplicas(db, config, log);
  } catch (error) {
    await Promise.all([bus.close(), store?.close(), db.close()]);
    throw error;
  }
  const searchCache = new SearchCache({ keepsPages: db.kind === 'pglite' });
  searchCache.shareThrough(bus);
  const events = startEvents(db, config, log, bus);
  const storage = {
    changeLog: events.changeLog,
    config,
    db,
    bus,
    searchCache,
    createBatches: config.createGroupsInFlight > 0 ? new CreateBatches(db, config.createGroupsInFlight, MAX_CREATES_PER_GROUP, events.changeLog) : undefined,
    binaryStorage: new DatabaseBinaryStorage(db),
    // Only the embedded database has this process as its sole writer (see ResourceCache).
    resourceCache: db.kind === 'pglite' && config.resourceCacheSize > 0 ? new LruResourceCache(config.resourceCacheSize) : noResourceCache,
  };
  let auth: AuthService;
  try {
    // Keys generated once and stored in the database; super admin ensured (idempotent, race-safe).
    auth = await AuthService.start(storage, config);
    auth.shareThrough(bus, store);
    watchSearchParameters(bus);
    watchBotCode(bus);
    watchProfiles(bus);
    await bootstrapSuperAdmin(auth, log);
  } catch (error) {
    await Promise.all([bus.close(), store?.close(), replicas?.close(), db.close()]);
    throw error;
  }
  const readRouting = replicas && new ReadYourWrites(replicas, db, bus, log);
  const bots = new BotRunner({ config, auth, log, apiAs: botApi(() => services, config, log) });
  const services: Services = { log, ...storage, auth, bus, readRouting, bots };
  const admission = new Admission(config);
  // Deliveries yield to the requests admission lets in (src/events/yielding.ts).
  const viewers = new MemberViewers(services);
  events.deliverWith({ storage, auth, authors: (projectId, subscription) => viewers.authorViewer(projectId, subscription), botDelivery: botDelivery(services), foreground: admission });
  // AsyncJobs no queued job stands for, whose server stopped, become `error` (src/admin/async-job.ts).
  const jobs = await watchAsyncJobs(services);
  // Queued jobs, and jobs whose server stopped, run here as well as anywhere (src/operations/jobs).
  const worker = startJobWorker(services, (identity, requestId) => createRequestContext(services, identity, requestId));
  const statistics = keepStatistics(db, config, log);
  // Ended exports' files go after EXPORT_FILE_TTL_MS, whichever server notices first (src/bulk).
  const exportExpiry = startExportExpiry(services);
  const readAhead = config.searchReadAhead ? new ReadAhead(services.searchCache) : undefined;
  const metrics = new ServerMetrics(metricsSources(services, admission, readAhead));
  const exposition = cluster.isWorker ? workerExposition(metrics.registry) : localExposition(metrics.registry);
  // With WORKERS, the primary serves METRICS_PORT for all of them (src/workers.ts).
  const metricsServer = !cluster.isWorker && config.metricsPort !== undefined ? await listenMetrics(config.metricsPort, exposition, config.metricsToken, log) : undefined;
  const server = await listenHttp(createHttpHandlers(services, admission, { metrics, exposition }, readAhead), config.port, config, log);
  const webSockets = serveWebSockets(
    server,
    { hub: events.webSockets!, keys: auth.keys, storage, config, log, viewerOf: (id) => viewers.viewerOf(id) },
    config,
  );
  const port = (server.address() as AddressInfo).port;
  log.info({ port, database: db.kind, readReplicas: replicas?.replicas.length ?? 0 }, 'Flint listening');
  const metricsChannel = metricsServer && { close: () => new Promise<void>((resolve) => metricsServer.close(() => resolve())) };
  return {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: metricsServer && `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`,
    services,
    // WebSockets first: an upgraded socket would hold the HTTP server's close until its timeout.
    close: () =>
      webSockets.close().then(() => shutdown(
        server,
        db,
        [worker, events, jobs, bus, statistics, exportExpiry, bots, ...(store ? [store] : []), ...(replicas ? [replicas] : []), ...(metricsChannel ? [metricsChannel] : [])],
        config.shutdownTimeoutMs,
      )),
  };
}

/**
 * Subscriptions whose endpoint is `Bot/{id}`: `POST Bot/{id}/$execute` through the router, as an
 * internal caller administering the Subscription's project, with the notification's body (the
 * resource) and headers; a 2xx answer is a delivered notification.
 */
function botDelivery(services: Services): BotDelivery {
  return async (delivery): Promise<AttemptResult> => {
    const { body, headers } = restHookRequest(delivery);
    const identity = { projectId: delivery.projectId, superAdmin: false, projectAdmin: true, subject: `Subscription/${delivery.subscription.id}` };
    const ctx = createRequestContext(services, identity, randomUUID());
    const lowerCase = new Map(Object.entries({ ...headers, 'Content-Type': 'application/fhir+json' }).map(([name, value]) => [name.toLowerCase(), value]));
    const response = await fhirRouter.handle(
      { method: 'POST', path: `Bot/${delivery.botId}/$execute`, query: new URLSearchParams(), header: (name) => lowerCase.get(name), body: valueBody(JSON.parse(body ?? delivery.text ?? '{}')) },
      ctx,
    );
    return { ok: response.status >= 200 && response.status < 300, status: response.status };
  };
}

/**
 * What a bot's MedplumClient reaches, as the bot's own membership: the FHIR router (REST, Bundles,
 * operations; src/router/bot-calls.ts) and GraphQL at `$graphql`, through a GraphQL handler whose
 * contexts are the bots' (looked up by the request id it is given).
 */
function botApi(services: () => Services, config: Config, log: Logger): (identity: Identity) => BotApi {
  const contexts = new Map<string, RequestContext>();
  let graphql: GraphQLHandler | undefined;
  return (identity) => async (call) => {
    const ctx = createRequestContext(services(), identity, randomUUID());
    if (call.path.split('?')[0] !== '$graphql') return routeBotCall(fhirRouter, ctx, call);
    graphql ??= createGraphQLHandler({ getContext: async (_request, requestId) => contexts.get(requestId!)!, log, config });
    contexts.set(ctx.requestId, ctx);
    try {
      const answer = await graphql.handle({ method: call.method, url: `${config.fhirBaseUrl}/${call.path}`, headers: call.headers, body: call.body, requestId: ctx.requestId });
      return { status: answer.status, headers: answer.headers, body: answer.body ?? '' };
    } finally {
      contexts.delete(ctx.requestId);
    }
  };
}

/** What the metrics' gauges read at each scrape. */
function metricsSources(services: Services, admission: Admission, readAhead: ReadAhead | undefined): MetricsSources {
  const { db, resourceCache, searchCache } = services;
  return {
    pools: () => db.poolUse(),
    admission: () => admission.load(),
    jobs: () => countUnfinishedJobs(db),
    caches: () => ({
      ...(resourceCache instanceof LruResourceCache ? { resource: resourceCache } : {}),
      search_count: { hits: searchCache.countHits, misses: searchCache.countMisses },
      ...(readAhead ? { search_read_ahead: readAhead } : {}),
    }),
  };
}

function localExposition(registry: Registry): MetricsExposition {
  return { contentType: registry.contentType, text: () => registry.metrics() };
}

/** DATABASE_READ_URL: the replicas, polled for what they have replayed (src/db/replicas.ts). */
async function openReplicas(db: Database, config: Config, log: Logger): Promise<ReplicaSet | undefined> {
  if (config.databaseReadUrls.length === 0) return undefined;
  return ReplicaSet.open(
    db,
    config,
    (url) => Database.open({ ...config, databaseUrl: url }),
    (source, error) => log.warn({ err: error, source }, 'polling for read replicas failed; reads go to the primary until a replica answers and has caught up'),
  );
}

/** On PostgreSQL, the search tables are analyzed when they changed enough, and vacuumed when STATISTICS_VACUUM says so, whatever autovacuum does (db/postgres-statistics.ts). */
function keepStatistics(db: Database, config: Config, log: Logger): { close(): Promise<void> } {
  if (db.kind !== 'postgres') return { close: async () => undefined };
  const vacuumSession = config.statisticsVacuum && config.databaseUrl ? pgVacuumSession(config.databaseUrl) : undefined;
  const keeper = new PostgresStatistics(db, config.statisticsIntervalMs, (error) => log.warn({ err: error }, 'analyzing or vacuuming the search tables failed'), vacuumSession);
  keeper.start();
  return keeper;
}

/** Drains: no new connections, idle keep-alive sockets closed, busy ones finish (up to a timeout). */
async function shutdown(server: Server, db: Database, channels: readonly { close(): Promise<void> }[], timeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await closed;
  clearTimeout(timer);
  await Promise.all(channels.map((channel) => channel.close()));
  await db.close();
}
