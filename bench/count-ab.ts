/**
 * Exact counts (`_summary=count`) of several source trees side by side, on one or more databases
 * (e.g. the search benchmark's database never analyzed and a copy analyzed): per tree, database and
 * search, the median wall time and the median CPU of the PostgreSQL backend that ran it (parallel
 * workers not included: NO_PARALLEL=1 turns them off for the session, for CPU figures that hold
 * all the work), with the total each tree answered (they must agree). Trees interleave in every
 * round. Runs each tree's search service in this process (bench/search-plans.ts does the same for one tree).
 *
 *   BENCH_DATABASES=postgres://postgres@127.0.0.1:5432/flint_search,postgres://...analyzed BENCH_TREES=/work/wt-base,. \
 *     [ROUNDS=5] [NO_PARALLEL=1] [TIMEOUT_MS=20000] npx tsx bench/count-ab.ts
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { SqlExecutor } from '../src/db/database.js';
import { cpuSeconds } from './process-cpu.js';

const DATABASES = (process.env.BENCH_DATABASES ?? '').split(',').filter(Boolean);
if (DATABASES.length === 0) throw new Error('Set BENCH_DATABASES to the search benchmark database(s)');
const TREES = (process.env.BENCH_TREES ?? '.').split(',').filter(Boolean);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PROJECT = 'search-bench';
const POLICY = { policyId: 'count-ab', resources: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' }] };
type Who = 'member' | 'every' | 'policy';
const shapes: [string, string, string, Who?][] = [
  ['status (one row each)', 'Observation', 'status=final'],
  ['code|system', 'Observation', 'code=http://loinc.org|8867-4'],
  ['code, no system', 'Observation', 'code=8867-4'],
  ['category', 'Observation', 'category=vital-signs'],
  ['subject (one row each)', 'Observation', 'subject=Patient/pat-4242'],
  ['code + status', 'Observation', 'code=http://loinc.org|8867-4&status=final'],
  ['status + category', 'Observation', 'status=final&category=vital-signs'],
  ['status + code', 'Observation', 'status=final&code=http://loinc.org|8867-4'],
  ['category + status', 'Observation', 'category=vital-signs&status=final'],
  ['gender (one row each)', 'Patient', 'gender=female'],
  ['union: combo-code', 'Observation', 'combo-code=http://loinc.org|8867-4'],
  ['every: code', 'Observation', 'code=http://loinc.org|8867-4', 'every'],
  ['policy: code', 'Observation', 'code=http://loinc.org|8867-4', 'policy'],
];

interface Tree {
  search: (services: unknown, type: string, params: [string, string][]) => Promise<{ total?: { value: number } }>;
  servicesFor: (options: unknown) => unknown;
  config: Record<string, unknown>;
}
const trees = new Map<string, Tree>();
for (const tree of TREES) {
  const service = await import(pathToFileURL(resolve(tree, 'src/search/service.ts')).href);
  const { loadConfig } = await import(pathToFileURL(resolve(tree, 'src/config.ts')).href);
  trees.set(tree, { search: service.search, servicesFor: service.searchServicesFor, config: { ...loadConfig({}), fhirBaseUrl: 'http://x/fhir/R4' } });
}

const clients = new Map<string, { client: pg.Client; pid: number; executor: SqlExecutor }>();
for (const url of DATABASES) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`SET statement_timeout = ${Number(process.env.TIMEOUT_MS ?? 20_000)}`);
  if (process.env.NO_PARALLEL === '1') await client.query('SET max_parallel_workers_per_gather = 0');
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const executor: SqlExecutor = {
    query: async <R>(sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rows as R[],
    execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rowCount ?? 0,
  };
  clients.set(url, { client, pid, executor });
}

const samples = new Map<string, { ms: number[]; cpu: number[]; totals: Set<string> }>();
for (let round = 0; round < ROUNDS; round++) {
  for (const url of DATABASES) {
    const { pid, executor } = clients.get(url)!;
    for (const [label, type, query, who = 'member'] of shapes) {
      for (const [tree, { search, servicesFor, config }] of trees) {
        const identity = { projectId: PROJECT, superAdmin: who === 'every', accessPolicy: who === 'policy' ? POLICY : undefined };
        const services = servicesFor({ database: executor, identity, config });
        const params = [...new URLSearchParams(`${query}&_summary=count${who === 'every' ? '' : `&_project=${PROJECT}`}`).entries()];
        const [cpu0, t0] = [cpuSeconds(pid), performance.now()];
        const total = await search(services, type, params).then(
          (result) => String(result.total?.value),
          (error: unknown) => `failed: ${String(error).slice(0, 80)}`,
        );
        const [ms, cpu] = [performance.now() - t0, (cpuSeconds(pid) - cpu0) * 1000];
        const key = `${url}|${label}|${tree}`;
        const entry = samples.get(key) ?? { ms: [], cpu: [], totals: new Set<string>() };
        // The first round warms the caches and plans; it is not counted.
        if (round > 0 || ROUNDS === 1) entry.ms.push(ms), entry.cpu.push(cpu);
        entry.totals.add(total);
        samples.set(key, entry);
      }
    }
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
for (const url of DATABASES) {
  console.log(`== ${url.replace(/^.*\//, '')}`);
  for (const [label] of shapes) {
    const cells = TREES.map((tree) => {
      const s = samples.get(`${url}|${label}|${tree}`)!;
      return `${tree}: ${median(s.ms).toFixed(0)} ms, backend ${median(s.cpu).toFixed(0)} ms CPU, total ${[...s.totals].join('/')}`;
    });
    console.log(`  ${label}: ${cells.join(' | ')}`);
  }
}
for (const { client } of clients.values()) await client.end();
