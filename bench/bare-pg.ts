import { spawn, type ChildProcess } from 'node:child_process';
import { answering } from './flint-process.js';
import { compiledScript } from './tree-build.js';

/**
 * The bare pg baseline (bench/bare-pg-server.ts) as a child process next to Flint: started on
 * `port` against Flint's database with Flint's pool size (stop it with stopFlint). It runs compiled,
 * as Flint's servers do: under tsx perf showed no JavaScript symbols for it.
 */
export function launchBarePg(port: number, databaseUrl: string, poolSize: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), compiledScript(new URL('./bare-pg-server.ts', import.meta.url))], {
    env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: poolSize },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return answering(child, port, 'the bare pg server');
}
