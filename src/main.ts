import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config.js';
import { startServer } from './server.js';
import { runWorkers } from './workers.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  if (config.workers > 1 && cluster.isPrimary) return runWorkers(config);
  const server = await startServer(config);
  const stop = (signal: string): void => {
    server.services.log.info({ signal }, 'shutting down');
    server
      .close()
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

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
