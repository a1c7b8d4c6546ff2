/**
 * Terminology benchmark: a 100,000-concept code system (loaded with CodeSystem/$import)
 * and a 10,000-concept hierarchy (ten children per concept, five levels), then autocannon at 16
 * connections on $lookup, ValueSet/$validate-code and ValueSet/$expand with is-a filters.
 * Appends the figures to bench/RESULTS.md.
 *
 *   npx tsx bench/terminology.ts                                        embedded PGlite (temporary DATA_DIR)
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_term_bench npx tsx bench/terminology.ts
 *
 * BENCH_DURATION is seconds per scenario (default 10). BENCH_RESULTS names the file the figures
 * are appended to (default bench/RESULTS.md); BENCH_ONLY runs only the scenarios whose name
 * contains it. Besides throughput and latency, each row gives the CPU time per request of the
 * server process (HTTP, framework and, on PGlite, the database worker thread) and, on PostgreSQL,
 * of the database's backends serving the bench database (read from /proc: Linux only).
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { clientCredentialsToken, fhirCall, launchFlint } from './flint-process.js';
import { cpuSince, cpuSnapshot } from './process-cpu.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 16;
const PORT = Number(process.env.BENCH_PORT ?? 18095);
const BASE = `http://127.0.0.1:${PORT}`;
const FHIR = `${BASE}/fhir/R4`;
const CLIENT_ID = 'terminology-bench-admin';
const CLIENT_SECRET = 'terminology-bench-secret-0123456789';
const RESULTS = process.env.BENCH_RESULTS ?? new URL('./RESULTS.md', import.meta.url).pathname;
const ONLY = process.env.BENCH_ONLY;
const BIG = 'http://flint.bench/CodeSystem/big';
const TREE = 'http://flint.bench/CodeSystem/tree';
const BIG_SIZE = 100_000;
const TREE_SIZE = 10_000;
const CHUNK = 10_000;

const rand = (n: number) => Math.floor(Math.random() * n);

async function startFlint(dataDir: string | undefined): Promise<ChildProcess> {
  return launchFlint(PORT, {
    ...(DATABASE_URL ? { DATABASE_URL } : { DATA_DIR: dataDir }),
    LOG_LEVEL: 'warn',
    DATABASE_POOL_SIZE: '16',
    MAX_BODY_BYTES: String(64 * 1024 * 1024),
    SUPER_ADMIN_CLIENT_ID: CLIENT_ID,
    SUPER_ADMIN_CLIENT_SECRET: CLIENT_SECRET,
  });
}

async function token(): Promise<string> {
  return clientCredentialsToken(BASE, { id: CLIENT_ID, secret: CLIENT_SECRET });
}

function call(auth: string, method: string, path: string, body?: unknown): Promise<any> {
  return fhirCall(FHIR, auth, method, path, body);
}

/** Creates the code systems and value sets once (a second run on the same database reuses them). */
async function seed(auth: string): Promise<{ bigLoadSeconds: number }> {
  const probe = await fetch(`${FHIR}/CodeSystem/$lookup?system=${encodeURIComponent(BIG)}&code=C${BIG_SIZE - 1}`, { headers: { authorization: `Bearer ${auth}` } });
  if (probe.status === 200) return { bigLoadSeconds: NaN };
  const started = performance.now();
  await call(auth, 'POST', '/CodeSystem', { resourceType: 'CodeSystem', url: BIG, name: 'Big', status: 'active', content: 'not-present' });
  for (let from = 0; from < BIG_SIZE; from += CHUNK) {
    const parameter: unknown[] = [{ name: 'system', valueUri: BIG }];
    for (let i = from; i < Math.min(from + CHUNK, BIG_SIZE); i++) parameter.push({ name: 'concept', valueCoding: { code: `C${i}`, display: `Concept number ${i}` } });
    for (let i = from; i < Math.min(from + CHUNK, BIG_SIZE); i += 7) {
      parameter.push({ name: 'property', part: [{ name: 'code', valueCode: `C${i}` }, { name: 'property', valueCode: 'group' }, { name: 'value', valueCode: `G${i % 100}` }] });
    }
    await call(auth, 'POST', '/CodeSystem/$import', { resourceType: 'Parameters', parameter });
  }
  const bigLoadSeconds = (performance.now() - started) / 1000;
  await call(auth, 'POST', '/CodeSystem', { resourceType: 'CodeSystem', url: TREE, name: 'Tree', status: 'active', content: 'not-present' });
  const parameter: unknown[] = [{ name: 'system', valueUri: TREE }];
  for (let i = 0; i < TREE_SIZE; i++) parameter.push({ name: 'concept', valueCoding: { code: `T${i}`, display: `Tree node ${i}` } });
  for (let i = 1; i < TREE_SIZE; i++) {
    parameter.push({ name: 'property', part: [{ name: 'code', valueCode: `T${i}` }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: `T${Math.floor((i - 1) / 10)}` }] });
  }
  await call(auth, 'POST', '/CodeSystem/$import', { resourceType: 'Parameters', parameter });
  const valueSet = (url: string, compose: unknown) => call(auth, 'POST', '/ValueSet', { resourceType: 'ValueSet', url, status: 'active', compose });
  await valueSet('http://flint.bench/ValueSet/big', { include: [{ system: BIG }] });
  await valueSet('http://flint.bench/ValueSet/tree-all', { include: [{ system: TREE, filter: [{ property: 'concept', op: 'is-a', value: 'T0' }] }] });
  await valueSet('http://flint.bench/ValueSet/tree-branch', { include: [{ system: TREE, filter: [{ property: 'concept', op: 'is-a', value: 'T1' }] }] });
  return { bigLoadSeconds };
}

interface Scenario {
  name: string;
  target: string;
  path: () => string;
  /** Latency targets are measured with one connection; throughput targets with 16. */
  connections?: number;
}

const scenarios: Scenario[] = [
  { name: '$lookup (100k concepts)', target: '≥3,000 req/s', path: () => `/fhir/R4/CodeSystem/$lookup?system=${encodeURIComponent(BIG)}&code=C${rand(BIG_SIZE)}` },
  {
    name: 'ValueSet/$validate-code (100k concepts)',
    target: '≥3,000 req/s',
    path: () => `/fhir/R4/ValueSet/$validate-code?url=${encodeURIComponent('http://flint.bench/ValueSet/big')}&system=${encodeURIComponent(BIG)}&code=C${rand(BIG_SIZE)}`,
  },
  {
    name: 'ValueSet/$validate-code is-a (10k tree)',
    target: '',
    path: () => `/fhir/R4/ValueSet/$validate-code?url=${encodeURIComponent('http://flint.bench/ValueSet/tree-all')}&system=${encodeURIComponent(TREE)}&code=T${rand(TREE_SIZE)}`,
  },
  {
    name: '$expand is-a root of 10k tree, count=100 at a random offset',
    target: 'p95 < 50 ms',
    connections: 1,
    path: () => `/fhir/R4/ValueSet/$expand?url=${encodeURIComponent('http://flint.bench/ValueSet/tree-all')}&count=100&offset=${rand(TREE_SIZE - 100)}`,
  },
  {
    name: '$expand is-a T1 (1,111 codes, nested, unpaged)',
    target: 'p95 < 50 ms',
    connections: 1,
    path: () => `/fhir/R4/ValueSet/$expand?url=${encodeURIComponent('http://flint.bench/ValueSet/tree-branch')}`,
  },
  {
    name: '$expand is-a root of 10k tree (all 10,000 codes, flat)',
    target: 'p95 < 50 ms',
    connections: 1,
    path: () => `/fhir/R4/ValueSet/$expand?url=${encodeURIComponent('http://flint.bench/ValueSet/tree-all')}&excludeNested=true`,
  },
];

function load(scenario: Scenario, auth: string): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: FHIR,
        connections: scenario.connections ?? CONNECTIONS,
        duration: DURATION,
        headers: { authorization: `Bearer ${auth}` },
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: scenario.path() }) }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

async function main(): Promise<void> {
  const dataDir = DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'flint-term-bench-'));
  const flint = await startFlint(dataDir);
  const lines: string[] = [];
  try {
    const auth = await token();
    const { bigLoadSeconds } = await seed(auth);
    // Warm-up: first calls load the code systems' pages into the cache.
    for (const scenario of scenarios) await fetch(`${BASE}${scenario.path()}`, { headers: { authorization: `Bearer ${auth}` } });
    const database = DATABASE_URL ? 'PostgreSQL' : 'PGlite (embedded)';
    lines.push(
      '',
      `## Terminology, ${database}, ${new Date().toISOString().slice(0, 16)}Z`,
      '',
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; client, server and database on it; ${DURATION} s per scenario; load average at start ${loadavg()[0].toFixed(1)} (the machine is shared).`,
      Number.isNaN(bigLoadSeconds) ? 'Data reused from an earlier run.' : `Loading 100,000 concepts with CodeSystem/$import (10 calls of 10,000): ${bigLoadSeconds.toFixed(1)} s.`,
      '',
      '| scenario | target | connections | req/s | p50 ms | p90 ms | p97.5 ms | p99 ms | errors | server CPU µs/req | database CPU µs/req |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const scenario of scenarios) {
      if (ONLY && !scenario.name.includes(ONLY)) continue;
      const before = await cpuSnapshot(flint.pid!, DATABASE_URL);
      const result = await load(scenario, auth);
      const cpu = await cpuSince(flint.pid!, DATABASE_URL, before);
      const errors = result.errors + result.non2xx;
      const perRequest = (seconds: number) => (result.requests.total > 0 ? Math.round((seconds * 1e6) / result.requests.total) : 0);
      const databaseCpu = DATABASE_URL ? String(perRequest(cpu.database)) : '(in server)';
      const row = `| ${scenario.name} | ${scenario.target} | ${scenario.connections ?? CONNECTIONS} | ${Math.round(result.requests.average)} | ${result.latency.p50} | ${result.latency.p90} | ${result.latency.p97_5} | ${result.latency.p99} | ${errors} | ${perRequest(cpu.server)} | ${databaseCpu} |`;
      console.log(row);
      lines.push(row);
    }
  } finally {
    flint.kill('SIGTERM');
    await new Promise((r) => flint.once('exit', r));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
  appendFileSync(RESULTS, `${lines.join('\n')}\n`);
}

await main();
