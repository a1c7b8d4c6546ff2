import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import { pino, type Logger } from 'pino';
import { AggregatorRegistry, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Config } from './config.js';
import { listenMetrics } from './http/metrics/endpoint.js';
import type { MetricsExposition } from './http/metrics/server-metrics.js';

/**
 * `WORKERS=n` (PostgreSQL only): this process forks n server processes that share the port, so
 * that the server's JavaScript uses more than one core; it serves no requests itself (only
 * METRICS_PORT, with every worker's metrics added up). Each worker is
 * a server as several behind a load balancer are: its caches hear the others' writes through the
 * cache notices (README, "Several servers"). Workers start one after another, so that a first
 * start (migrations, the super admin) runs once; one that dies unexpectedly is replaced.
 */
export async function runWorkers(config: Config): Promise<void> {
  const log = pino({ level: config.logLevel }).child({ role: 'primary' });
  let stopping = false;
  const metricsServer = await serveClusterMetrics(config, log);

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    log.error({ pid: worker.process.pid, code, signal }, 'worker exited; starting another');
    // A worker failing at start would otherwise be restarted in a tight loop.
    setTimeout(() => void startWorker().catch((error: unknown) => log.error({ err: error }, 'worker did not start')), 1000);
  });

  const stop = (signal: NodeJS.Signals): void => {
    stopping = true;
    log.info({ signal }, 'stopping workers');
    metricsServer?.close();
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    let left = workers.length;
    if (left === 0) process.exit(0);
    let failed = false;
    for (const worker of workers) {
      worker.once('exit', (code, signal) => {
        // A worker still starting has no handler yet: SIGTERM ends it, which is no failure.
        failed ||= code !== 0 && signal !== 'SIGTERM';
        if (--left === 0) process.exit(failed ? 1 : 0);
      });
      // SIGTERM whatever the primary got: the workers drain their requests either way.
      worker.process.kill('SIGTERM');
    }
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  for (let i = 0; i < config.workers && !stopping; i++) {
    try {
      await startWorker();
    } catch (error) {
      if (stopping) return;
      throw error;
    }
  }
  log.info({ workers: config.workers, port: config.port }, 'Flint workers listening');
}

/**
 * The workers' metrics added up: asked for by any worker scraped on the shared port
 * (METRICS_TOKEN), and served by this process on METRICS_PORT when set.
 */
async function serveClusterMetrics(config: Config, log: Logger): Promise<Server | undefined> {
  const exposition = clusterExposition();
  answerWorkersAskingForMetrics(exposition);
  if (config.metricsPort === undefined) return undefined;
  const server = await listenMetrics(config.metricsPort, exposition, config.metricsToken, log);
  log.info({ metricsPort: config.metricsPort }, 'metrics of all workers on their own port');
  return server;
}

/** Forks a worker and waits until it listens (or fails to start). */
function startWorker(): Promise<Worker> {
  const worker = cluster.fork();
  return new Promise((resolve, reject) => {
    const onExit = (code: number) => reject(new Error(`worker exited with code ${code} before listening`));
    worker.once('exit', onExit);
    worker.once('listening', () => {
      worker.off('exit', onExit);
      resolve(worker);
    });
  });
}

/** A worker asks the primary for every worker's metrics (a scrape of the shared port). */
const METRICS_REQUEST = 'flint:metrics-request';
const METRICS_ANSWER = 'flint:metrics-answer';
/** The primary asks a worker for its own metrics, as prom-client's JSON. */
const WORKER_METRICS_REQUEST = 'flint:worker-metrics-request';
const WORKER_METRICS_ANSWER = 'flint:worker-metrics-answer';
/** Longest the primary waits for a worker's metrics. */
const WORKER_METRICS_TIMEOUT_MS = 5_000;

interface Message {
  type?: string;
  id?: number;
  text?: string;
  error?: string;
  metrics?: MetricObjectWithValues<MetricValue<string>>[];
}

/**
 * The primary's view: the metrics of every worker that listens, added up by prom-client's cluster
 * registry (`AggregatorRegistry.aggregate`). Only workers that listen are asked: one still
 * starting has no registry yet and would leave the scrape waiting (prom-client's own
 * `clusterMetrics` asks every forked worker).
 */
function clusterExposition(): MetricsExposition {
  const listening = new Set<Worker>();
  cluster.on('listening', (worker) => listening.add(worker));
  cluster.on('exit', (worker) => listening.delete(worker));
  const pending = new Map<number, (message: Message) => void>();
  cluster.on('message', (_worker, message: Message | null) => {
    if (message?.type === WORKER_METRICS_ANSWER && typeof message.id === 'number') pending.get(message.id)?.(message);
  });
  let next = 0;
  const ask = (worker: Worker): Promise<MetricObjectWithValues<MetricValue<string>>[]> =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => settle({ error: `worker ${worker.process.pid} did not answer within ${WORKER_METRICS_TIMEOUT_MS} ms` }), WORKER_METRICS_TIMEOUT_MS);
      const settle = (message: Message) => {
        clearTimeout(timer);
        pending.delete(id);
        if (message.error !== undefined || !message.metrics) reject(new Error(message.error ?? 'no metrics'));
        else resolve(message.metrics);
      };
      pending.set(id, settle);
      worker.send({ type: WORKER_METRICS_REQUEST, id });
    });
  return {
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
    text: async () => AggregatorRegistry.aggregate(await Promise.all([...listening].map(ask))).metrics(),
  };
}

/** A worker scraped on the shared port asks the primary, which alone sees every worker. */
function answerWorkersAskingForMetrics(exposition: MetricsExposition): void {
  cluster.on('message', (worker, message: Message | null) => {
    if (message?.type !== METRICS_REQUEST || typeof message.id !== 'number') return;
    const id = message.id;
    exposition.text().then(
      (text) => worker.send({ type: METRICS_ANSWER, id, text }),
      (error: unknown) => worker.send({ type: METRICS_ANSWER, id, error: String(error) }),
    );
  });
}

/**
 * In a worker: gives `registry` to the primary when it asks, and answers a scrape of the shared
 * port with the sum over all workers (asked of the primary), so that any worker gives the whole.
 */
export function workerExposition(registry: Registry): MetricsExposition {
  const pending = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
  let next = 0;
  process.on('message', (message: Message | null) => {
    if (message?.type === WORKER_METRICS_REQUEST && typeof message.id === 'number') {
      const id = message.id;
      registry.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: WORKER_METRICS_ANSWER, id, metrics }),
        (error: unknown) => process.send?.({ type: WORKER_METRICS_ANSWER, id, error: String(error) }),
      );
      return;
    }
    if (message?.type !== METRICS_ANSWER || typeof message.id !== 'number') return;
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiting?.reject(new Error(`collecting the workers' metrics failed: ${message.error}`));
    else waiting?.resolve(message.text ?? '');
  });
  return {
    contentType: registry.contentType,
    text: () =>
      new Promise((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        process.send?.({ type: METRICS_REQUEST, id });
      }),
  };
}
