import cluster from 'node:cluster';
import { ConfigError, loadConfig, type Config } from './config.js';
import type { Tracing } from './telemetry.js';

// The server's modules are imported after tracing starts (when it does): the instrumentations
// patch `http` and `pg` as they are imported, and nothing is loaded for them otherwise.
async function main(): Promise<void> {
  const config = configOrExit();
  if (config.workers > 1 && cluster.isPrimary) {
    const { runWorkers } = await import('./workers.js');
    return runWorkers(config);
  }
  const tracing = process.env.OTEL_EXPORTER_OTLP_ENDPOINT ? await (await import('./telemetry.js')).startTracing() : undefined;
  const { startServer } = await import('./server.js');
  const server = await startServer(config);
  const stop = (signal: string): void => {
    server.services.log.info({ signal }, 'shutting down');
    server
      .close()
      .then(() => flushTraces(tracing))
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        server.services.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  // A worker's Ctrl-C reaches the primary as well, which stops the workers with SIGTERM.
  if (cluster.isWorker) process.on('SIGINT', () => undefined);
  else process.once('SIGINT', () => stop('SIGINT'));
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
}

/** The spans still batched are sent before the process ends; an exporter that fails does not block the exit. */
async function flushTraces(tracing: Tracing | undefined): Promise<void> {
  await tracing?.shutdown().catch((error: unknown) => console.error('flushing traces failed', error));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
