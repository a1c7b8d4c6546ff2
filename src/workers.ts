import cluster, { type Worker } from 'node:cluster';
import { pino } from 'pino';
import type { Config } from './config.js';

/**
 * `WORKERS=n` (PostgreSQL only): this process forks n server processes that share the port, so
 * that the server's JavaScript uses more than one core; it serves nothing itself. Each worker is
 * a server as several behind a load balancer are: its caches hear the others' writes through the
 * cache notices (README, "Several servers"). Workers start one after another, so that a first
 * start (migrations, the super admin) runs once; one that dies unexpectedly is replaced.
 */
export async function runWorkers(config: Config): Promise<void> {
  const log = pino({ level: config.logLevel }).child({ role: 'primary' });
  let stopping = false;

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    log.error({ pid: worker.process.pid, code, signal }, 'worker exited; starting another');
    // A worker failing at start would otherwise be restarted in a tight loop.
    setTimeout(() => void startWorker().catch((error: unknown) => log.error({ err: error }, 'worker did not start')), 1000);
  });

  const stop = (signal: NodeJS.Signals): void => {
    stopping = true;
    log.info({ signal }, 'stopping workers');
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
