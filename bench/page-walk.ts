/**
 * `npx tsx bench/page-walk.ts` (PostgreSQL, BENCH_DATABASE_URL): the cursor walk of every Patient
 * of the search benchmark's project (`Patient?_sort=_lastUpdated&_count=100`, one client, as a
 * browser or an app pages through results, asking for gzip as fetch does), on data bench/search.ts
 * generated into that database. Prints per page of 100: the median and p95 time, and the CPU time
 * of the server process (all threads) and of the database's backends, which a busy machine
 * changes far less than the time. BENCH_WALKS walks (default 3, the first a warm-up, not counted).
 *
 * BENCH_TREES=/work/main,. runs the servers of several source trees (each `src/main.ts` from its
 * own directory) in turn, walk by walk, for an A/B on a shared machine. BENCH_RESULTS appends the
 * table to a file (default: print only).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { answering, clientCredentialsToken, serverArgs, stopFlint } from './flint-process.js';
import { cpuSince, cpuSnapshot } from './process-cpu.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const PORT = Number(process.env.BENCH_PORT ?? 18095);
const WALKS = Number(process.env.BENCH_WALKS ?? 3);
const TREES = (process.env.BENCH_TREES ?? '.').split(',');
const PAGE = 100;
const PROJECT = 'search-bench';
const ADMIN = { id: 'page-walk-admin', secret: 'page-walk-secret-0123456789' };

interface Walk {
  readonly times: number[];
  readonly serverCpu: number;
  readonly databaseCpu: number;
}

function launch(tree: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, serverArgs(tree), {
    cwd: tree,
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL,
      LOG_LEVEL: 'warn',
      STATISTICS_INTERVAL_MS: '0',
      SUPER_ADMIN_CLIENT_ID: ADMIN.id,
      SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return answering(child, port, `Flint of ${tree}`);
}

async function walk(child: ChildProcess, base: string, token: string): Promise<Walk> {
  const before = await cpuSnapshot(child.pid!, DATABASE_URL);
  let url: string | undefined = `${base}/fhir/R4/Patient?_sort=_lastUpdated&_count=${PAGE}&_project=${PROJECT}`;
  const times: number[] = [];
  while (url) {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' } });
    const body = (await res.json()) as { link?: { relation: string; url: string }[] };
    if (res.status !== 200) throw new Error(`page failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    times.push(performance.now() - started);
    url = body.link?.find((link) => link.relation === 'next')?.url;
  }
  const used = await cpuSince(child.pid!, DATABASE_URL, before);
  return { times, serverCpu: used.server, databaseCpu: used.database };
}

function row(tree: string, walks: readonly Walk[]): string {
  const times = walks.flatMap((w) => w.times).sort((a, b) => a - b);
  const pages = times.length;
  const at = (q: number) => times[Math.min(pages - 1, Math.floor(q * pages))].toFixed(1);
  const perPage = (seconds: number) => Math.round((seconds * 1e6) / pages);
  const server = perPage(walks.reduce((sum, w) => sum + w.serverCpu, 0));
  const database = perPage(walks.reduce((sum, w) => sum + w.databaseCpu, 0));
  const mean = (times.reduce((sum, t) => sum + t, 0) / pages).toFixed(2);
  return `| ${tree} | ${pages} | ${mean} | ${at(0.5)} | ${at(0.95)} | ${server} | ${database} |`;
}

async function main(): Promise<void> {
  if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to the search benchmark database (bench/search.ts generates it)');
  // One after another: each makes the super admin client at its start.
  const servers: ChildProcess[] = [];
  for (const [i, tree] of TREES.entries()) servers.push(await launch(tree, PORT + i));
  const walks = TREES.map((): Walk[] => []);
  try {
    const tokens = await Promise.all(TREES.map((_, i) => clientCredentialsToken(`http://127.0.0.1:${PORT + i}`, ADMIN)));
    for (let round = 0; round < WALKS; round++) {
      for (let i = 0; i < TREES.length; i++) {
        const result = await walk(servers[i], `http://127.0.0.1:${PORT + i}`, tokens[i]);
        if (round > 0) walks[i].push(result);
      }
    }
  } finally {
    await Promise.all(servers.map(stopFlint));
  }
  const lines = [
    '',
    `Cursor walk, \`Patient?_sort=_lastUpdated&_count=${PAGE}\` with gzip, one client, ${WALKS - 1} walks per tree after a warm-up, interleaved; load average at start ${loadavg()[0].toFixed(1)}.`,
    '',
    '| tree | pages | mean ms | median ms | p95 ms | server CPU µs/page | database CPU µs/page |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...TREES.map((tree, i) => row(tree, walks[i])),
    '',
  ];
  console.log(lines.join('\n'));
  if (process.env.BENCH_RESULTS) appendFileSync(process.env.BENCH_RESULTS, lines.join('\n'));
}

await main();
