/**
 * `npm run bench`: starts Flint as a child process on each database, drives it with autocannon
 * at 16 connections, and appends the figures to bench/RESULTS.md.
 *
 *   npm run bench                         embedded PGlite, plus PostgreSQL when BENCH_DATABASE_URL is set
 *   BENCH_SCENARIOS=read,create npm run bench   (a scenario is selected by its first word: read, create, validate,
 *                                                graphql, transaction, batch, search, conditional, hostile, overload)
 *   BENCH_DURATION=10 npm run bench       seconds per scenario (default 10)
 *   BENCH_WORKERS=1,2 npm run bench       PostgreSQL once per WORKERS setting (default 1 and 2)
 *   BENCH_RESULTS=/tmp/mine.md npm run bench   append to another file than bench/RESULTS.md
 *
 * On PostgreSQL the read scenario is also compared, in alternating slices, with a bare Node http
 * server reading the same rows by a prepared pg statement (bench/bare-pg-server.ts).
 *   BENCH_READ_URL=<replica> npm run bench   PostgreSQL once more per WORKERS setting with DATABASE_READ_URL
 *                                            (a streaming replica of BENCH_DATABASE_URL), printing its lag
 *   BENCH_PGLITE=0 npm run bench          skip the embedded database
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { typicalObservation, typicalPatient } from './fixtures.js';
import { bundleScenarios } from './bundle-scenarios.js';
import { clientCredentialsToken, launchFlint, newProjectClient, stopFlint, type BenchClient } from './flint-process.js';
import { FLOOD_CONNECTIONS, runOverload, STEADY_CONNECTIONS } from './overload.js';
import { launchBarePg } from './bare-pg.js';
import { HOSTILE_CONNECTIONS, runHostile } from './hostile.js';
import { ReplicaLag } from './replica-lag.js';
import { shapeTarget } from '../test/fuzz/shapes.js';

const CONNECTIONS = 16;
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
/** BENCH_WORKERS: the WORKERS settings PostgreSQL is measured with, one run each (default 1 and 2). */
const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? '1,2').split(',').map(Number);
const PORT = Number(process.env.BENCH_PORT ?? 18080);
const BASE = `http://127.0.0.1:${PORT}`;
const FHIR = `${BASE}/fhir/R4`;
const RESULTS = process.env.BENCH_RESULTS || new URL('./RESULTS.md', import.meta.url).pathname;

interface Scenario {
  name: string;
  target: string;
  /** Loads the server for `seconds` (BENCH_DURATION by default). */
  run(ids: string[], seconds?: number): Promise<autocannon.Result>;
}

interface Row {
  database: string;
  scenario: string;
  target: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** Filled with the bearer token of the benchmark project's client once Flint is up (every route needs one). */
const AUTH_HEADERS: Record<string, string> = {};
/** The same client's token with SMART resource scopes, which every request then checks. */
const SCOPED_HEADERS: Record<string, string> = {};
/** That client's credentials (the hostile scenario's token requests send them). */
let projectClient: BenchClient | undefined;
const JSON_HEADERS: Record<string, string> = { 'content-type': 'application/fhir+json' };
const GRAPHQL_HEADERS: Record<string, string> = { 'content-type': 'application/json' };
/** The LOINC code (heart rate) of the Observations the GraphQL list scenario reads. */
const GRAPHQL_BENCH_CODE = '8867-4';
const BENCH_CLIENT = { id: 'bench-client', secret: 'bench-client-secret' };

function load(options: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ connections: CONNECTIONS, duration: DURATION, ...options }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

const scenarios: Scenario[] = [
  { name: 'read Patient by id', target: '≥4,000 req/s, p99 < 20 ms', run: readById(BASE) },
  // The same read with a token whose SMART scopes are checked (user/Patient.rs user/Observation.rs).
  { name: 'read Patient by id, SMART-scoped token', target: 'within 5% of read Patient by id', run: readById(BASE, SCOPED_HEADERS) },
  {
    name: 'create Patient',
    target: '≥1,600 req/s on PostgreSQL, ≥800 on PGlite',
    run: (_ids, seconds = DURATION) =>
      load({
        duration: seconds,
        url: `${FHIR}/Patient`,
        requests: [{ method: 'POST', headers: JSON_HEADERS, setupRequest: (req) => ({ ...req, body: JSON.stringify(typicalPatient()) }) }],
      }),
  },
  {
    name: 'create Observation',
    target: '≥1,600 req/s on PostgreSQL, ≥800 on PGlite',
    run: (ids, seconds = DURATION) => {
      let i = 0;
      return load({
        duration: seconds,
        url: `${FHIR}/Observation`,
        requests: [
          { method: 'POST', headers: JSON_HEADERS, setupRequest: (req) => ({ ...req, body: JSON.stringify(typicalObservation(ids[i++ % ids.length])) }) },
        ],
      });
    },
  },
  // `$validate` with the bare resource as the body, as MedplumClient.validateResource posts it.
  { name: 'validate Patient ($validate)', target: 'resources/s; ≥ create Patient', run: validateScenario('Patient', () => typicalPatient()) },
  {
    name: 'validate Observation ($validate)',
    target: 'resources/s; ≥ create Observation',
    run: (ids, seconds) => {
      let i = 0;
      return validateScenario('Observation', () => typicalObservation(ids[i++ % ids.length]))(ids, seconds);
    },
  },
  {
    name: 'graphql Patient by id',
    target: '≥80% of REST read req/s',
    run: (ids, seconds = DURATION) => {
      let i = 0;
      return load({
        duration: seconds,
        url: `${FHIR}/$graphql`,
        requests: [
          {
            method: 'POST',
            headers: GRAPHQL_HEADERS,
            setupRequest: (req) => ({ ...req, body: graphqlBody(PATIENT_QUERY, { id: ids[i++ % ids.length] }) }),
          },
        ],
      });
    },
  },
  {
    name: 'graphql 100 Observations with subject names',
    target: '≥500 req/s',
    run: (_ids, seconds = DURATION) =>
      load({
        duration: seconds,
        url: `${FHIR}/$graphql`,
        requests: [{ method: 'POST', headers: GRAPHQL_HEADERS, body: graphqlBody(OBSERVATIONS_WITH_SUBJECTS_QUERY, {}) }],
      }),
  },
];

/** Reads of Patients by id, round the seeded ids, from the server at `base` (Flint or the bare pg baseline). */
function readById(base: string, headers: Record<string, string> = AUTH_HEADERS): Scenario['run'] {
  return (ids, seconds = DURATION) => {
    let i = 0;
    return load({
      duration: seconds,
      url: `${base}/fhir/R4`,
      requests: [{ method: 'GET', headers, setupRequest: (req) => ({ ...req, path: `/fhir/R4/Patient/${ids[i++ % ids.length]}` }) }],
    });
  };
}

/** `POST /{type}/$validate` with a fresh resource from `make` as the body. */
function validateScenario(type: string, make: () => unknown): Scenario['run'] {
  return (_ids, seconds = DURATION) =>
    load({
      duration: seconds,
      url: `${FHIR}/${type}/$validate`,
      requests: [{ method: 'POST', headers: JSON_HEADERS, setupRequest: (req) => ({ ...req, body: JSON.stringify(make()) }) }],
    });
}

/** The bare pg server's port (bench/bare-pg-server.ts): next to Flint's. */
const BARE_PORT = PORT + 1;
const bareRead: Scenario = { name: 'bare pg read Patient by id', target: '', run: readById(`http://127.0.0.1:${BARE_PORT}`) };

const PATIENT_QUERY = 'query ($id: ID!) { Patient(id: $id) { id name { family given } gender birthDate } }';
/** Each subject is a different Patient: the reference loads are batched into one query. */
const OBSERVATIONS_WITH_SUBJECTS_QUERY = `{
  ObservationList(code: "http://loinc.org|${GRAPHQL_BENCH_CODE}", _count: 100) {
    id status valueQuantity { value unit }
    subject { reference resource { ... on Patient { name { family given } } } }
  }
}`;

function graphqlBody(query: string, variables: Record<string, unknown>): string {
  return JSON.stringify({ query, variables });
}

/** 100 Observations with a code of their own, each about a different seeded Patient. */
async function seedGraphqlObservations(patientIds: string[]): Promise<void> {
  await Promise.all(
    patientIds.slice(0, 100).map(async (patientId) => {
      const observation = typicalObservation(patientId);
      observation.code = { coding: [{ system: 'http://loinc.org', code: GRAPHQL_BENCH_CODE }] };
      const res = await fetch(`${FHIR}/Observation`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(observation) });
      if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`);
    }),
  );
}

async function startFlint(env: Record<string, string>): Promise<ChildProcess> {
  const child = await launchFlint(PORT, {
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    SUPER_ADMIN_CLIENT_ID: BENCH_CLIENT.id,
    SUPER_ADMIN_CLIENT_SECRET: BENCH_CLIENT.secret,
    ...env,
  });
  // Every benchmark request carries the token of a project's own client, as an app's would (a
  // super admin's searches span every project, which the project-first indexes cannot narrow).
  projectClient = await newProjectClient(BASE, await clientCredentialsToken(BASE, BENCH_CLIENT), 'Benchmark').catch(async (error: unknown) => {
    await stopFlint(child); // a server left running would answer the next run on this port
    throw error;
  });
  const token = await clientCredentialsToken(BASE, projectClient);
  AUTH_HEADERS.authorization = `Bearer ${token}`;
  JSON_HEADERS.authorization = `Bearer ${token}`;
  GRAPHQL_HEADERS.authorization = `Bearer ${token}`;
  SCOPED_HEADERS.authorization = `Bearer ${await clientCredentialsToken(BASE, projectClient, 'system/Patient.rs system/Observation.rs')}`;
  return child;
}

async function seedPatients(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, count - start) }, async () => {
        const res = await fetch(`${FHIR}/Patient`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(typicalPatient()) });
        if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { id: string }).id;
      }),
    );
    ids.push(...batch);
  }
  return ids;
}

async function benchDatabase(label: string, env: Record<string, string>, selected: Set<string> | undefined): Promise<Row[]> {
  if (selected && [...selected].every((name) => name === 'overload')) return [];
  const child = await startFlint(env);
  const rows: Row[] = [];
  try {
    // The hostile scenario makes its own data.
    const seeded = !selected || [...selected].some((name) => name !== 'hostile' && name !== 'overload');
    const ids = seeded ? await seedPatients(1000) : [];
    if (seeded) await seedGraphqlObservations(ids);
    for (const scenario of scenarios) {
      if (selected && !selected.has(scenario.name.split(' ')[0])) continue;
      await scenario.run(ids.slice(0, 100)).catch(() => undefined); // warm-up pass, short
      const result = await scenario.run(ids);
      const row: Row = {
        database: label,
        scenario: scenario.name,
        target: scenario.target,
        rps: Math.round(result.requests.average),
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.errors + result.non2xx,
      };
      console.log(`${label.padEnd(10)} ${row.scenario.padEnd(22)} ${String(row.rps).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${row.errors}`);
      rows.push(row);
    }
    rows.push(...(await runBundleScenarios(label, ids, selected, rows)));
    const read = scenarios.find((s) => s.name === 'read Patient by id')!;
    const graphqlById = scenarios.find((s) => s.name === 'graphql Patient by id')!;
    if (!selected || (selected.has('read') && selected.has('graphql'))) rows.push(await interleaved(label, graphqlById, read, ids));
    if (env.DATABASE_URL && (!selected || selected.has('read'))) rows.push(await versusBarePg(label, env, read, ids));
    // Last: on a server that does not resist them, these requests can take it down.
    if (!selected || selected.has('hostile')) rows.push(await hostile(label, env.DATABASE_URL ? 'postgres' : 'pglite'));
  } finally {
    await stopFlint(child);
  }
  return rows;
}

/** Bundle figures count resources per second (50 per Bundle), compared with the single creates of the same run. */
async function runBundleScenarios(label: string, ids: string[], selected: Set<string> | undefined, earlier: Row[]): Promise<Row[]> {
  const rows: Row[] = [];
  const singleCreates = earlier.find((row) => row.scenario === 'create Observation')?.rps;
  for (const scenario of bundleScenarios(FHIR, JSON_HEADERS)) {
    if (selected && !selected.has(scenario.name.split(' ')[0])) continue;
    await scenario.run(ids.slice(0, 100), 2).catch(() => undefined);
    const result = await scenario.run(ids, DURATION);
    const rps = Math.round(result.requests.average);
    const resources = rps * scenario.resourcesPerRequest;
    const versus = singleCreates && scenario.name.startsWith('transaction') ? `; ${(resources / singleCreates).toFixed(1)}x single Observation creates (${singleCreates}/s)` : '';
    const row: Row = {
      database: label,
      scenario: scenario.name,
      target: `${scenario.target}: ${resources} resources/s${versus}`,
      rps,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.non2xx,
    };
    console.log(`${label.padEnd(10)} ${row.scenario}: ${rps} req/s, ${row.target}, errors ${row.errors}`);
    rows.push(row);
  }
  return rows;
}

/**
 * The fuzz suite's hostile shapes replayed at a few connections while the health check is timed:
 * the row's latencies are the health check's (BENCH_HOSTILE_SKIP: a regular expression on shape
 * names to leave out).
 */
async function hostile(label: string, database: 'pglite' | 'postgres'): Promise<Row> {
  if (!projectClient) throw new Error('the benchmark project has no client');
  const target = shapeTarget({ baseUrl: BASE, database, clientId: projectClient.id, clientSecret: projectClient.secret, token: AUTH_HEADERS.authorization.slice('Bearer '.length) });
  const skip = process.env.BENCH_HOSTILE_SKIP ? new RegExp(process.env.BENCH_HOSTILE_SKIP) : undefined;
  const { rps, answers, unexpected, health } = await runHostile(target, DURATION, skip);
  const answered = Object.entries(answers).map(([kind, count]) => `${count} ${kind}`).join(', ');
  const row: Row = {
    database: label,
    scenario: `hostile requests at ${HOSTILE_CONNECTIONS} connections, health check latency`,
    target: `health check < 1 s: max ${health.max} ms over ${health.samples} checks, ${health.failures} failed; answers ${answered}, ${unexpected} not as expected`,
    rps,
    p50: health.p50,
    p99: health.p99,
    errors: health.failures + unexpected,
  };
  console.log(`${label.padEnd(10)} ${row.scenario}: ${rps} req/s, health p50 ${health.p50} ms p99 ${health.p99} ms; ${row.target}`);
  return row;
}

/**
 * Flint's read by id as a share of the bare pg baseline's (a Node http server and a prepared pg
 * statement on the same rows, with Flint's pool size), interleaved on the same machine and data.
 */
async function versusBarePg(label: string, env: Record<string, string>, read: Scenario, ids: string[]): Promise<Row> {
  const bare = await launchBarePg(BARE_PORT, env.DATABASE_URL, env.DATABASE_POOL_SIZE ?? process.env.DATABASE_POOL_SIZE ?? '10');
  try {
    await bareRead.run(ids.slice(0, 100), 2); // warm-up: connections opened, statement prepared
    return await interleaved(label, read, bareRead, ids);
  } finally {
    await stopFlint(bare);
  }
}

/**
 * One project flooding at FLOOD_CONNECTIONS while another reads at STEADY_CONNECTIONS, with and
 * without admission control (bench/overload.ts), each on servers of its own: a row per run, the
 * steady project's latencies in the columns.
 */
async function overload(label: string, env: Record<string, string>, selected: Set<string> | undefined): Promise<Row[]> {
  if (selected && !selected.has('overload')) return [];
  const runs = await runOverload(PORT + 1, { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', ...env }, BENCH_CLIENT, DURATION);
  return runs.map((run) => {
    const row: Row = {
      database: label,
      scenario: `overload ${run.mode}: steady project at ${STEADY_CONNECTIONS} connections, flood at ${FLOOD_CONNECTIONS}`,
      target: `steady ${run.steady.successPercent}% answered 2xx; flood ${run.flood.rps} req/s, ${run.flood.refusedPercent}% refused 503, p50 ${run.flood.p50} ms, p99 ${run.flood.p99} ms`,
      rps: run.steady.rps,
      p50: run.steady.p50,
      p99: run.steady.p99,
      errors: run.steady.failures,
    };
    console.log(`${label.padEnd(10)} ${row.scenario}: steady ${row.rps} req/s p50 ${row.p50} ms p99 ${row.p99} ms; ${row.target}`);
    return row;
  });
}

/** Slices and their length for `interleaved`. */
const SLICES = 10;
const SLICE_SECONDS = 2;

/**
 * `a` as a share of `b`, measured in alternating slices of a few seconds on the same server: the
 * throughput of a shared machine drifts widely from one minute to the next, even for the same
 * scenario (measured: see bench/RESULTS.md), which back-to-back scenarios of ten seconds each turn
 * into a ratio far off in either direction.
 */
async function interleaved(label: string, a: Scenario, b: Scenario, ids: string[]): Promise<Row> {
  let doneA = 0;
  let doneB = 0;
  let errors = 0;
  for (let slice = 0; slice < SLICES; slice++) {
    const resultB = await b.run(ids, SLICE_SECONDS);
    const resultA = await a.run(ids, SLICE_SECONDS);
    doneA += resultA.requests.total;
    doneB += resultB.requests.total;
    errors += resultA.errors + resultA.non2xx + resultB.errors + resultB.non2xx;
  }
  const seconds = SLICES * SLICE_SECONDS;
  const [rateA, rateB] = [Math.round(doneA / seconds), Math.round(doneB / seconds)];
  const share = Math.round((100 * doneA) / doneB);
  const row: Row = {
    database: label,
    scenario: `${a.name} ÷ ${b.name}, interleaved`,
    target: `≥80%: ${share}% (${rateA} vs ${rateB} req/s in ${SLICES} alternating ${SLICE_SECONDS} s slices each)`,
    rps: rateA,
    p50: NaN,
    p99: NaN,
    errors,
  };
  console.log(`${label.padEnd(10)} ${row.scenario}: ${row.target}`);
  return row;
}

async function main(): Promise<void> {
  const selected = process.env.BENCH_SCENARIOS ? new Set(process.env.BENCH_SCENARIOS.split(',')) : undefined;
  const rows: Row[] = [];
  if (process.env.BENCH_PGLITE !== '0') {
    const dataDir = mkdtempSync(join(tmpdir(), 'flint-bench-'));
    try {
      rows.push(...(await benchDatabase('PGlite', { DATA_DIR: dataDir, DATABASE_URL: '' }, selected)));
      rows.push(...(await overload('PGlite', { DATA_DIR: dataDir, DATABASE_URL: '' }, selected)));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const pgUrl = process.env.BENCH_DATABASE_URL;
  const readUrl = process.env.BENCH_READ_URL;
  for (const workers of pgUrl ? WORKER_COUNTS : []) {
    const label = workers === 1 ? 'PostgreSQL' : `PostgreSQL, WORKERS=${workers}`;
    rows.push(...(await benchDatabase(label, { DATABASE_URL: pgUrl!, WORKERS: String(workers) }, selected)));
    rows.push(...(await overload(label, { DATABASE_URL: pgUrl!, WORKERS: String(workers) }, selected)));
    if (readUrl) rows.push(...(await benchWithReplica(`${label}, replica reads`, { DATABASE_URL: pgUrl!, DATABASE_READ_URL: readUrl, WORKERS: String(workers) }, selected)));
  }
  record(rows);
}

/** benchDatabase with the replica's lag sampled on the primary meanwhile, and printed. */
async function benchWithReplica(label: string, env: Record<string, string>, selected: Set<string> | undefined): Promise<Row[]> {
  const lag = new ReplicaLag(env.DATABASE_URL);
  await lag.start();
  try {
    return await benchDatabase(label, env, selected);
  } finally {
    console.log(`${label}: ${await lag.stop()}`);
  }
}

/** A latency for the table; none for rows that sum several runs. */
function latency(ms: number): string {
  return Number.isNaN(ms) ? '–' : String(ms);
}

function record(rows: Row[]): void {
  if (!existsSync(RESULTS)) writeFileSync(RESULTS, '# Benchmark results\n\nAppended by `npm run bench`. Newest last.\n');
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const lines = [
    '',
    `## ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${machine}; autocannon, ${CONNECTIONS} connections, ${DURATION} s per scenario, client, server and database on one machine.`,
    '',
    '| database | scenario | req/s | p50 ms | p99 ms | errors | target |',
    '|---|---|---:|---:|---:|---:|---|',
    ...rows.map((r) => `| ${r.database} | ${r.scenario} | ${r.rps} | ${latency(r.p50)} | ${latency(r.p99)} | ${r.errors} | ${r.target} |`),
    '',
  ];
  appendFileSync(RESULTS, lines.join('\n'));
}

await main();
