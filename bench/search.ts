/**
 * Search benchmark: generates 100,000 Patients and 1,000,000 Observations into one
 * project of PostgreSQL (bench/search-data.ts) and a tenth of that into a second one, starts Flint
 * on it as a child process and drives each search shape with autocannon at 16 connections; then
 * walks every Patient by cursor with _count=1000 and records the query plans of the common
 * shapes. Appends everything to bench/RESULTS.md.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_bench npx tsx bench/search.ts
 *
 * BENCH_PATIENTS / BENCH_OBSERVATIONS change the sizes; data already present in a bench project
 * is reused; BENCH_DURATION is seconds per scenario (default 10); BENCH_SCENARIOS=a,b selects;
 * BENCH_RESULTS=<file> appends there instead of bench/RESULTS.md.
 *
 * Fresh data: the server runs without its statistics keeper (STATISTICS_INTERVAL_MS=0) and nothing
 * analyzes the tables, so the scenarios first run on the planner statistics the data arrived
 * with (none, on a database the bench just filled). BENCH_FRESH=1 then runs ANALYZE and every
 * scenario again, and records both rates side by side: each search's fresh rate against its
 * analyzed one (the plans must not need the statistics). BENCH_WARMUP=1 first runs every scenario
 * once, unmeasured and without ANALYZE, so the fresh pass starts as warm as the analyzed one does.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import type { SqlExecutor } from '../src/db/database.js';
import { search, searchServicesFor } from '../src/search/service.js';
import { FAMILIES, generate, LOINC } from './search-data.js';
import { cpuSince, cpuSnapshot } from './process-cpu.js';
import { clientCredentialsToken, idleServer, launchFlint } from './flint-process.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 100_000);
const OBSERVATIONS = Number(process.env.BENCH_OBSERVATIONS ?? 1_000_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 16;
const PORT = Number(process.env.BENCH_PORT ?? 18090);
const BASE = `http://127.0.0.1:${PORT}`;
const FHIR = `${BASE}/fhir/R4`;
const PROJECT = 'search-bench';
/** A second, smaller tenant (a tenth of the sizes): other projects' rows are in every index. */
const OTHER_PROJECT = 'search-bench-other';
const CLIENT_ID = 'search-bench-admin';
const CLIENT_SECRET = 'search-bench-secret-0123456789';
/** BENCH_RESULTS: a file to append to instead of bench/RESULTS.md (trial runs). */
const RESULTS = process.env.BENCH_RESULTS ?? new URL('./RESULTS.md', import.meta.url).pathname;

const rand = (n: number) => Math.floor(Math.random() * n);
const pick = <T>(list: readonly T[]) => list[rand(list.length)];

interface Scenario {
  name: string;
  /** A fresh query string (after `?`, without _project) per request. */
  type: string;
  query: () => string;
  /** Searches every project (no `_project`), as a super admin may; otherwise `_project=search-bench`. */
  everyProject?: true;
  /** A GraphQL query (POST `$graphql` in the bench project) instead of the REST search. */
  graphql?: () => string;
}

const scenarios: Scenario[] = [
  { name: 'Patient by name prefix', type: 'Patient', query: () => `name=${encodeURIComponent(pick(FAMILIES).slice(0, 3).toLowerCase())}` },
  { name: 'Patient by identifier', type: 'Patient', query: () => `identifier=http://hospital.example.org/mrn|MRN${1 + rand(PATIENTS)}` },
  {
    name: 'Observation by subject and code',
    type: 'Observation',
    query: () => `subject=Patient/pat-${1 + rand(PATIENTS)}&code=http://loinc.org|${pick(LOINC)}`,
  },
  {
    name: 'Observation by date range (one day)',
    type: 'Observation',
    query: () => {
      const day = new Date(Date.UTC(2020, 0, 1) + rand(1800) * 86_400_000).toISOString().slice(0, 10);
      return `date=ge${day}&date=le${day}`;
    },
  },
  {
    name: 'chained: Observation?subject:Patient.identifier',
    type: 'Observation',
    query: () => `subject:Patient.identifier=MRN${1 + rand(PATIENTS)}`,
  },
  { name: '_sort=-_lastUpdated&_count=20', type: 'Observation', query: () => '_sort=-_lastUpdated&_count=20' },
  {
    name: '_include=Observation:subject (by code)',
    type: 'Observation',
    query: () => `code=http://loinc.org|${pick(LOINC)}&_include=Observation:subject`,
  },
  { name: '_sort=-date (by code)', type: 'Observation', query: () => `code=http://loinc.org|${pick(LOINC)}&_sort=-date` },
  { name: '_total=estimate (by code)', type: 'Observation', query: () => `code=http://loinc.org|${pick(LOINC)}&_total=estimate` },
  { name: '_total=accurate (by code)', type: 'Observation', query: () => `code=http://loinc.org|${pick(LOINC)}&_total=accurate` },
  {
    name: 'GraphQL: 50 Observations by code with subject names',
    type: 'Observation',
    query: () => '',
    graphql: () =>
      `{ ObservationList(code: "http://loinc.org|${pick(LOINC)}", _params: [{ name: "_project", value: "${PROJECT}" }], _count: 50) { id subject { resource { ... on Patient { name { family } } } } } }`,
  },
  // A super admin's searches of every project (no _project): both projects' rows.
  {
    name: 'every project: Patient by identifier',
    type: 'Patient',
    query: () => `identifier=http://hospital.example.org/mrn|MRN${1 + rand(PATIENTS)}`,
    everyProject: true,
  },
  { name: 'every project: _sort=-_lastUpdated&_count=20', type: 'Observation', query: () => '_sort=-_lastUpdated&_count=20', everyProject: true },
  {
    name: 'every project: chained',
    type: 'Observation',
    query: () => `subject:Patient.identifier=MRN${1 + rand(PATIENTS)}`,
    everyProject: true,
  },
  {
    name: 'every project: chained by name',
    type: 'Observation',
    query: () => `subject:Patient.name=${encodeURIComponent(pick(FAMILIES).toLowerCase())}${rand(997)}`,
    everyProject: true,
  },
  { name: 'every project: _sort=-date (by code)', type: 'Observation', query: () => `code=http://loinc.org|${pick(LOINC)}&_sort=-date`, everyProject: true },
  { name: 'key sorted: subject and _sort=-date', type: 'Observation', query: () => `subject=Patient/pat-${1 + rand(PATIENTS)}&_sort=-date` },
  // A count over every Observation of the project: the estimate lets it through on fresh data.
  { name: '_total=accurate (status=final)', type: 'Observation', query: () => 'status=final&_total=accurate' },
];

async function startFlint(): Promise<ChildProcess> {
  return launchFlint(PORT, {
    DATABASE_URL,
    LOG_LEVEL: 'warn',
    DATABASE_POOL_SIZE: '16',
    STATISTICS_INTERVAL_MS: '0',
    SUPER_ADMIN_CLIENT_ID: CLIENT_ID,
    SUPER_ADMIN_CLIENT_SECRET: CLIENT_SECRET,
  });
}

async function token(): Promise<string> {
  return clientCredentialsToken(BASE, { id: CLIENT_ID, secret: CLIENT_SECRET });
}

interface Row {
  scenario: string;
  rps: number;
  p50: number;
  p90: number;
  p975: number;
  errors: number;
  /** CPU per request, µs: the server process's and its database backends' (the machine's other load does not count). */
  serverUs: number;
  databaseUs: number;
  /** Transactions the database committed or rolled back per request: the statements sent outside a transaction count one each. */
  transactions: number;
}

/** BENCH_FRESH=1: after the scenarios on the statistics the data arrived with, ANALYZE and run them again. */
const FRESH = process.env.BENCH_FRESH === '1';
/**
 * BENCH_WARMUP=1: every scenario once, unmeasured, before the first measured pass. A server just
 * started has its code uncompiled, and the first reads of pages nobody has read since they were
 * written set their hint bits (writing them back): the fresh pass would pay that alone, the
 * analyzed pass that follows it never.
 */
const WARMUP = process.env.BENCH_WARMUP === '1';

function isSelected(scenario: Scenario, selected: string[] | undefined): boolean {
  return !selected || selected.some((s) => scenario.name.startsWith(s));
}

async function warmUp(auth: string, selected: string[] | undefined): Promise<void> {
  console.log('warm-up: every scenario once, unmeasured, no ANALYZE');
  for (const scenario of scenarios.filter((s) => isSelected(s, selected))) {
    await idleServer(PORT);
    await load(scenario, auth, DURATION);
  }
}

/** Transactions committed and rolled back in the bench database so far (pg_stat_database). */
async function transactionCount(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query(`SELECT (xact_commit + xact_rollback)::bigint AS n FROM pg_stat_database WHERE datname = current_database()`);
  return Number((rows[0] as { n: string }).n);
}

async function runScenarios(pool: pg.Pool, auth: string, selected: string[] | undefined, serverPid: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    if (!isSelected(scenario, selected)) continue;
    // Each scenario alone: the requests the last one left in the server end first.
    const waited = await idleServer(PORT);
    if (waited > 0.5) console.log(`waited ${waited.toFixed(1)} s for the last scenario's requests to end`);
    await load(scenario, auth, 2); // warm-up
    const before = await cpuSnapshot(serverPid, DATABASE_URL);
    const transactionsBefore = await transactionCount(pool);
    const result = await load(scenario, auth, DURATION);
    const cpu = await cpuSince(serverPid, DATABASE_URL, before);
    // An idle backend reports its counts within 10 s (PGSTAT_IDLE_INTERVAL). The bench's own few
    // statements count too, a rounding error against a scenario's thousands of requests.
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const transactions = (await transactionCount(pool)) - transactionsBefore;
    const perRequest = (seconds: number) => Math.round((seconds * 1e6) / Math.max(1, result.requests.total));
    const row: Row = {
      scenario: scenario.name,
      rps: Math.round(result.requests.average),
      p50: result.latency.p50,
      p90: result.latency.p90,
      p975: result.latency.p97_5,
      errors: result.errors + result.non2xx,
      serverUs: perRequest(cpu.server),
      databaseUs: perRequest(cpu.database),
      transactions: Math.round((transactions / Math.max(1, result.requests.total)) * 10) / 10,
    };
    console.log(`${row.scenario.padEnd(48)} ${String(row.rps).padStart(6)} req/s  p50 ${row.p50}  p90 ${row.p90}  p97.5 ${row.p975} ms  errors ${row.errors}  CPU µs/req server ${row.serverUs} database ${row.databaseUs}  transactions/req ${row.transactions}`);
    rows.push(row);
  }
  return rows;
}

async function analyzeAndRunAgain(pool: pg.Pool, auth: string, selected: string[] | undefined, serverPid: number): Promise<Row[]> {
  console.log('ANALYZE, then the scenarios again');
  await pool.query('ANALYZE');
  return runScenarios(pool, auth, selected, serverPid);
}

/** What the planner knows of the resource table: when it was last analyzed and the rows written since. */
async function statisticsState(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query(
    `SELECT last_analyze, last_autoanalyze, n_mod_since_analyze::int AS changed FROM pg_stat_user_tables WHERE relname = 'resource'`,
  );
  const row = rows[0] as { last_analyze: Date | null; last_autoanalyze: Date | null; changed: number } | undefined;
  if (!row) return 'resource table not found';
  const last = [row.last_analyze, row.last_autoanalyze].filter((d): d is Date => d !== null).sort((a, b) => b.getTime() - a.getTime())[0];
  return `resource ${last ? `last analyzed ${last.toISOString().slice(0, 16)}` : 'never analyzed'}, ${row.changed} rows written since`;
}

function scenarioTable(rows: Row[]): string[] {
  return [
    '| scenario | req/s | p50 ms | p90 ms | p97.5 ms | server / database CPU µs per request | transactions per request | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.scenario} | ${r.rps} | ${r.p50} | ${r.p90} | ${r.p975} | ${r.serverUs} / ${r.databaseUs} | ${r.transactions} | ${r.errors} |`),
  ];
}

/** Each scenario's rate on fresh data beside its rate after ANALYZE, and the share of it kept. */
function freshAgainstAnalyzed(fresh: Row[], analyzed: Row[]): string[] {
  return [
    '| scenario | fresh req/s | fresh p50 ms | fresh p97.5 ms | analyzed req/s | analyzed p50 ms | fresh / analyzed | CPU µs per request, server / database: fresh; analyzed | transactions per request: fresh; analyzed | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...fresh.map((f) => {
      const a = analyzed.find((r) => r.scenario === f.scenario)!;
      const share = a.rps > 0 ? `${(f.rps / a.rps).toFixed(2)}` : '-';
      const cpu = `${f.serverUs} / ${f.databaseUs}; ${a.serverUs} / ${a.databaseUs}`;
      return `| ${f.scenario} | ${f.rps} | ${f.p50} | ${f.p975} | ${a.rps} | ${a.p50} | ${share} | ${cpu} | ${f.transactions}; ${a.transactions} | ${f.errors + a.errors} |`;
    }),
  ];
}

function load(scenario: Scenario, auth: string, duration: number, connections = CONNECTIONS): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: FHIR,
        connections,
        duration,
        headers: { authorization: `Bearer ${auth}` },
        requests: [
          scenario.graphql
            ? {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                setupRequest: (req) => ({ ...req, path: '/fhir/R4/$graphql', body: JSON.stringify({ query: scenario.graphql!() }) }),
              }
            : {
                method: 'GET',
                setupRequest: (req) => ({
                  ...req,
                  path: `/fhir/R4/${scenario.type}?${scenario.query()}${scenario.everyProject ? '' : `&_project=${PROJECT}`}`,
                }),
              },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

/** Walks every Patient by cursor, `count` a page, and times each page. */
async function cursorWalk(auth: string, count: number): Promise<{ pages: number; resources: number; first: number; last: number; p50: number; max: number }> {
  let url: string | undefined = `${FHIR}/Patient?_sort=_lastUpdated&_count=${count}&_project=${PROJECT}`;
  const times: number[] = [];
  let resources = 0;
  while (url) {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${auth}` } });
    const body = (await res.json()) as { entry?: unknown[]; link?: { relation: string; url: string }[] };
    times.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`cursor walk failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    resources += body.entry?.length ?? 0;
    url = body.link?.find((l) => l.relation === 'next')?.url;
  }
  const sorted = [...times].sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    pages: times.length,
    resources,
    first: round(times[0]),
    last: round(times[times.length - 1]),
    p50: round(sorted[Math.floor(sorted.length / 2)]),
    max: round(sorted[sorted.length - 1]),
  };
}

/** The SQL the search service runs for a scenario, captured, then EXPLAIN ANALYZEd on PostgreSQL. */
async function plans(pool: pg.Pool): Promise<string[]> {
  const out: string[] = [];
  // The last element says which statement to explain: the page (default) or the exact count, or
  // that a super admin searches every project (the page).
  const shapes: [string, string, string, ('count' | 'every project')?][] = [
    ['Patient by name prefix', 'Patient', 'name=smi'],
    ['Patient by identifier', 'Patient', 'identifier=http://hospital.example.org/mrn|MRN4242'],
    ['Observation by subject and code', 'Observation', 'subject=Patient/pat-4242&code=http://loinc.org|8867-4'],
    ['Observation by date range', 'Observation', 'date=ge2023-03-01&date=le2023-03-01'],
    ['chained', 'Observation', 'subject:Patient.identifier=MRN4242'],
    ['_sort=-_lastUpdated', 'Observation', '_sort=-_lastUpdated&_count=20'],
    ['cursor page (deep)', 'Patient', '_sort=_lastUpdated&_count=1000'],
    ['_include=Observation:subject (by code)', 'Observation', 'code=http://loinc.org|8867-4&_include=Observation:subject'],
    ['_sort=-date (by code)', 'Observation', 'code=http://loinc.org|8867-4&_sort=-date'],
    ['_total=accurate (by code), the count', 'Observation', 'code=http://loinc.org|8867-4&_total=accurate', 'count'],
    ['date range count (a measure period)', 'Observation', 'date=ge2015-01-01&date=le2030-12-31&_summary=count', 'count'],
    ['every project: Patient by identifier', 'Patient', 'identifier=http://hospital.example.org/mrn|MRN4242', 'every project'],
    ['every project: _sort=-_lastUpdated', 'Observation', '_sort=-_lastUpdated&_count=20', 'every project'],
  ];
  for (const [name, type, query, which] of shapes) {
    const captured: { sql: string; args: readonly unknown[] }[] = [];
    const executor: SqlExecutor = {
      query: async <R>(sql: string, args: readonly unknown[] = []) => {
        captured.push({ sql, args });
        return (await pool.query(sql, args as unknown[])).rows as R[];
      },
      execute: async (sql: string, args: readonly unknown[] = []) => (await pool.query(sql, args as unknown[])).rowCount ?? 0,
    };
    const identity = { projectId: PROJECT, superAdmin: which === 'every project' };
    const services = searchServicesFor({ database: executor, identity, config: { ...loadConfig({}), fhirBaseUrl: FHIR, accurateCountThreshold: Number.MAX_SAFE_INTEGER } });
    await search(services, type, [...new URLSearchParams(query).entries()]);
    // The search also reads the project's SearchParameters (cached): pick the statement by its shape.
    const page =
      which === 'count'
        ? captured.find((c) => c.sql.includes('::int AS n'))!
        : captured.find((c) => c.sql.startsWith('SELECT r."resourceType", r.id') || c.sql.startsWith('SELECT u."resourceType", u.id'))!;
    const explained = await pool.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${page.sql}`, page.args as unknown[]);
    out.push(`### ${name}: \`${type}?${query}\``, '', '```', ...explained.rows.map((r) => r['QUERY PLAN'] as string), '```', '');
  }
  return out;
}

/** Generates a project's data unless it has Patients already; says which. */
async function generateOnce(pool: pg.Pool, projectId: string, patients: number, observations: number, idPrefix: string): Promise<string> {
  const existing = await pool.query(`SELECT count(*)::int AS n FROM resource WHERE "projectId" = $1 AND "resourceType" = 'Patient'`, [projectId]);
  if (existing.rows[0].n > 0) return `${projectId} reused`;
  console.log(`generating ${patients} Patients and ${observations} Observations into ${projectId} ...`);
  const result = await generate(DATABASE_URL!, projectId, patients, observations, idPrefix);
  const said = `${projectId} generated in ${result.seconds} s`;
  console.log(said);
  return said;
}

async function main(): Promise<void> {
  if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to a PostgreSQL database');
  const selected = process.env.BENCH_SCENARIOS?.split(',');
  const child = await startFlint();
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  const lines: string[] = [];
  try {
    const generated = [
      await generateOnce(pool, PROJECT, PATIENTS, OBSERVATIONS, ''),
      await generateOnce(pool, OTHER_PROJECT, Math.ceil(PATIENTS / 10), Math.ceil(OBSERVATIONS / 10), 'o-'),
    ].join('; ');
    const auth = await token();
    if (WARMUP) await warmUp(auth, selected);
    const statistics = await statisticsState(pool);
    const rows = await runScenarios(pool, auth, selected, child.pid!);
    const analyzed = FRESH ? await analyzeAndRunAgain(pool, auth, selected, child.pid!) : undefined;
    // The target for _total=estimate is a response time, not a rate: measured alone as well.
    const estimate = scenarios.find((s) => s.name.startsWith('_total=estimate'))!;
    const alone = isSelected(estimate, selected) ? await load(estimate, auth, 5, 1) : undefined;
    if (alone) console.log(`${estimate.name}, one client: p50 ${alone.latency.p50} p97.5 ${alone.latency.p97_5} ms`);
    await idleServer(PORT);
    const walk = await cursorWalk(auth, 1000);
    const walk100 = await cursorWalk(auth, 100);
    console.log('cursor walk', walk);
    const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    lines.push(
      '',
      `## Search, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (bench/search.ts, PostgreSQL)`,
      '',
      `${machine}; ${PATIENTS} Patients and ${OBSERVATIONS} Observations in one project, a tenth of that in another (${generated});`,
      `autocannon, ${CONNECTIONS} connections, ${DURATION} s per scenario; client, server and PostgreSQL on one machine;`,
      `no statistics keeper, no ANALYZE before the first table (${statistics})${WARMUP ? '; every scenario run once, unmeasured, before it (BENCH_WARMUP=1)' : ''}.`,
      'autocannon reports p90 and p97.5, not p95: p97.5 bounds p95 from above.',
      '',
      ...(analyzed ? freshAgainstAnalyzed(rows, analyzed) : scenarioTable(rows)),
      '',
      ...(alone ? [`${estimate.name} with one client (5 s): p50 ${alone.latency.p50} ms, p97.5 ${alone.latency.p97_5} ms, ${Math.round(alone.requests.average)} req/s.`, ''] : []),
      `Cursor walk of every Patient, \`_sort=_lastUpdated&_count=1000\`, one client: ${walk.pages} pages, ${walk.resources} resources;`,
      `first page ${walk.first} ms, last page ${walk.last} ms, median ${walk.p50} ms, slowest ${walk.max} ms.`,
      `The same walk with \`_count=100\`: ${walk100.pages} pages; first page ${walk100.first} ms, last page ${walk100.last} ms, median ${walk100.p50} ms, slowest ${walk100.max} ms.`,
      '',
      'Query plans (EXPLAIN ANALYZE of the page query the service sends):',
      '',
      ...(await plans(pool)),
    );
  } finally {
    await pool.end();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  appendFileSync(RESULTS, lines.join('\n'));
}

await main();
