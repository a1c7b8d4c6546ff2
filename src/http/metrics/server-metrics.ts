import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { LatencyHistogram, type LatencySeries } from './latency-histogram.js';

/** Counts kept by a cache as plain numbers (incremented on its own path; read at scrape time). */
export interface CacheCounts {
  readonly hits: number;
  readonly misses: number;
}

/** A connection pool's state at scrape time (node-postgres's Pool has these fields). */
export interface PoolUse {
  readonly name: string;
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

/**
 * Where the gauges read their values when Prometheus scrapes. The composition root supplies these:
 * the HTTP layer does not know the job store, and the job store may change.
 */
export interface MetricsSources {
  pools(): readonly PoolUse[];
  admission(): { readonly inWork: number; readonly queued: number };
  /** Asynchronous jobs not finished yet, by status (`accepted`, `active`): the job queue's depth. */
  jobs(): Promise<Readonly<Record<string, number>>>;
  caches(): Readonly<Record<string, CacheCounts>>;
}

/** The metrics text Prometheus scrapes: this process's, or every worker's added up (WORKERS). */
export interface MetricsExposition {
  readonly contentType: string;
  text(): Promise<string>;
}

/** Where the HTTP layer reports each request. */
export interface RequestMetrics {
  /** A request answered with `status`, which started at `started` (performance.now()). */
  observe(method: string, route: string, status: number, started: number): void;
}

/** Latency buckets in seconds: a cached read takes well under a millisecond, a large export seconds. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];


/**
 * The server's Prometheus metrics (prom-client), one registry per server. Requests are counted by
 * the route table's pattern, never the raw URL, so the series stay few whatever the ids and
 * queries; the histogram's `_count` is the number of requests by route and status.
 */
export class ServerMetrics implements RequestMetrics {
  readonly registry = new Registry();
  private readonly latency: LatencyHistogram;
  /** The series of each route, method and status, found without building a key per request. */
  private readonly series = new Map<string, Map<string, Map<number, LatencySeries>>>();

  constructor(sources: MetricsSources) {
    collectDefaultMetrics({ register: this.registry });
    this.latency = new LatencyHistogram(
      'flint_http_request_duration_seconds',
      'HTTP requests by method, route pattern and status: time from arrival to the answer being ready',
      LATENCY_BUCKETS,
      this.registry,
    );
    registerSourceGauges(this.registry, sources);
  }

  observe(method: string, route: string, status: number, started: number): void {
    let byMethod = this.series.get(route);
    if (byMethod === undefined) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (series === undefined) byStatus.set(status, (series = this.latency.series({ method, route, status: String(status) })));
    series.observe((performance.now() - started) / 1000);
  }
}

function registerSourceGauges(registry: Registry, sources: MetricsSources): void {
  const registers = [registry];
  new Gauge({
    name: 'flint_db_pool_connections',
    help: 'PostgreSQL pool connections by pool and state (total, idle, waiting: requests waiting for a connection)',
    labelNames: ['pool', 'state'],
    registers,
    collect() {
      this.reset();
      for (const pool of sources.pools()) {
        this.set({ pool: pool.name, state: 'total' }, pool.totalCount);
        this.set({ pool: pool.name, state: 'idle' }, pool.idleCount);
        this.set({ pool: pool.name, state: 'waiting' }, pool.waitingCount);
      }
    },
  });
  new Gauge({
    name: 'flint_admission_requests',
    help: 'Requests this server works on (in_work) and requests waiting for their turn (queued)',
    labelNames: ['state'],
    registers,
    collect() {
      const load = sources.admission();
      this.set({ state: 'in_work' }, load.inWork);
      this.set({ state: 'queued' }, load.queued);
    },
  });
  new Gauge({
    name: 'flint_async_jobs',
    help: 'Asynchronous jobs not finished, by status: the job queue depth (the same for every server of one database)',
    labelNames: ['status'],
    registers,
    // Every worker reads the same table: summing would count each job once per worker.
    aggregator: 'max',
    async collect() {
      const counts = await sources.jobs();
      for (const status of ['accepted', 'active']) this.set({ status }, counts[status] ?? 0);
    },
  });
  cacheLookups(registry, sources);
}

/** The caches count with plain numbers; the counter catches up with them at each scrape. */
function cacheLookups(registry: Registry, sources: MetricsSources): void {
  const seen = new Map<string, number>();
  new Counter({
    name: 'flint_cache_lookups_total',
    help: 'Lookups in the server caches (resource: reads by id on the embedded database; search_count: exact search totals), by result',
    labelNames: ['cache', 'result'],
    registers: [registry],
    collect() {
      for (const [cache, counts] of Object.entries(sources.caches())) {
        for (const result of ['hit', 'miss'] as const) {
          const key = `${cache} ${result}`;
          const now = result === 'hit' ? counts.hits : counts.misses;
          this.inc({ cache, result }, now - (seen.get(key) ?? 0));
          seen.set(key, now);
        }
      }
    },
  });
}
