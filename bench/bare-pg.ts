import { spawn, type ChildProcess } from 'node:child_process';
import { answering } from './flint-process.js';

/**
 * The bare pg baseline (bench/bare-pg-server.ts) as a child process next to Flint: started on
 * `port` against Flint's database with Flint's pool size (stop it with stopFlint).
 */
export function launchBarePg(port: number, databaseUrl: string, poolSize: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./bare-pg-server.ts', import.meta.url).pathname], {
    env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: poolSize },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return answering(child, port, 'the bare pg server');
}
