/**
 * `npx tsx bench/request-costs.ts`: where the time of a create and a read by id goes, on the
 * embedded database or on PostgreSQL (BENCH_DATABASE_URL). Prints, and appends to BENCH_RESULTS
 * when it names a file:
 *
 * - per scenario (autocannon, 16 connections, BENCH_DURATION s after a warm-up of
 *   BENCH_WARMUP s): requests per second, and per request the CPU time of the server process (all
 *   its threads), of the database's backends (PostgreSQL), and of this process (the load
 *   generator, which shares the machine's cores);
 * - statements per request (Database.statementCount of a server started in this process);
 * - on PostgreSQL, the same read from the bare pg baseline (bench/bare-pg-server.ts).
 *
 * BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' profiles the server (bench/flint-process.ts);
 * BENCH_SCENARIOS picks `create`, `read`, `bare` (all by default).
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { launchBarePg } from './bare-pg.js';
import { typicalPatient } from './fixtures.js';
import { clientCredentialsToken, launchFlint, newProjectClient, stopFlint } from './flint-process.js';
import { cpuSince, cpuSnapshot } from './process-cpu.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL || undefined;
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const PORT = Number(process.env.BENCH_PORT ?? 18085);
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'create,read,bare').split(','));
const RESULTS = process.env.BENCH_RESULTS;
const ADMIN = { id: 'costs-admin', secret: 'costs-admin-secret-0123456789' };
const DB_ENV = DATABASE_URL ? { DATABASE_URL } : { DATABASE_URL: '', DATA_DIR: 'memory://' };
const STATEMENT_SAMPLES = 200;

interface Load {
  readonly name: string;
  readonly options: (ids: readonly string[], auth: string) => Omit<autocannon.Options, 'url'>;
}

const createPatient: Load = {
  name: 'create Patient',
  options: (_ids, auth) => ({
    requests: [
      {
        method: 'POST',
        path: '/fhir/R4/Patient',
        headers: { authorization: auth, 'content-type': 'application/fhir+json' },
        setupRequest: (req) => ({ ...req, body: JSON.stringify(typicalPatient()) }),
      },
    ],
  }),
};

const readPatient: Load = {
  name: 'read Patient by id',
  options: (ids, auth) => {
    let i = 0;
    return { requests: [{ headers: { authorization: auth }, setupRequest: (req) => ({ ...req, path: `/fhir/R4/Patient/${ids[i++ % ids.length]}` }) }] };
  },
};

function load(port: number, options: Omit<autocannon.Options, 'url'>, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) =>
    autocannon({ url: `http://127.0.0.1:${port}`, connections: 16, duration: seconds, ...options }, (error, result) => (error ? reject(error) : resolve(result))),
  );
}

/** One scenario after its warm-up, with the CPU each party used per request. */
async function measure(name: string, child: ChildProcess, port: number, options: Omit<autocannon.Options, 'url'>): Promise<string> {
  await load(port, options, WARMUP);
  const before = await cpuSnapshot(child.pid!, DATABASE_URL);
  const client = process.cpuUsage();
  const result = await load(port, options, DURATION);
  const used = await cpuSince(child.pid!, DATABASE_URL, before);
  const clientUsage = process.cpuUsage(client);
  const served = Math.max(1, result.requests.total);
  const perRequest = (seconds: number) => Math.round((seconds * 1e6) / served);
  const database = DATABASE_URL ? String(perRequest(used.database)) : '(in server)';
  return `| ${name} | ${Math.round(result.requests.average)} | ${result.latency.p50} | ${result.latency.p99} | ${result.errors + result.non2xx} | ${perRequest(used.server)} | ${database} | ${perRequest((clientUsage.user + clientUsage.system) / 1e6)} |`;
}

async function seed(port: number, auth: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/fhir/R4/Patient`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/fhir+json' },
      body: JSON.stringify(typicalPatient()),
    });
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`);
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}

async function projectAuth(base: string): Promise<string> {
  const client = await newProjectClient(base, await clientCredentialsToken(base, ADMIN), 'Benchmark');
  return `Bearer ${await clientCredentialsToken(base, client)}`;
}

/** Throughput and CPU per request of each scenario on a server in a child process (as `npm start` runs). */
async function throughputRows(): Promise<string[]> {
  const child = await launchFlint(PORT, { LOG_LEVEL: 'info', SUPER_ADMIN_CLIENT_ID: ADMIN.id, SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret, ...DB_ENV });
  const rows: string[] = [];
  try {
    const auth = await projectAuth(`http://127.0.0.1:${PORT}`);
    const ids = await seed(PORT, auth, 1000);
    if (SCENARIOS.has('create')) rows.push(await measure(createPatient.name, child, PORT, createPatient.options(ids, auth)));
    if (SCENARIOS.has('read')) rows.push(await measure(readPatient.name, child, PORT, readPatient.options(ids, auth)));
    if (SCENARIOS.has('bare') && DATABASE_URL) {
      const bare = await launchBarePg(PORT + 1, DATABASE_URL, process.env.DATABASE_POOL_SIZE ?? '10');
      try {
        rows.push(await measure(`bare pg ${readPatient.name}`, bare, PORT + 1, readPatient.options(ids, auth)));
      } finally {
        await stopFlint(bare);
      }
    }
  } finally {
    await stopFlint(child);
  }
  return rows;
}

/** Statements each request sends, counted by a server started in this process. */
async function statementRows(): Promise<string[]> {
  const server = await startServer(
    loadConfig({ PORT: '0', BASE_URL: 'http://localhost/', LOG_LEVEL: 'silent', SUPER_ADMIN_CLIENT_ID: ADMIN.id, SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret, ...DB_ENV }),
    { log: pino({ level: 'silent' }) },
  );
  try {
    const port = Number(new URL(server.url).port);
    const auth = await projectAuth(server.url);
    const ids = await seed(port, auth, 10); // also the first sight of the token
    const counted = async (name: string, send: (i: number) => Promise<Response>) => {
      const before = server.services.db.statementCount;
      for (let i = 0; i < STATEMENT_SAMPLES; i++) await (await send(i)).arrayBuffer();
      return `| ${name} | ${((server.services.db.statementCount - before) / STATEMENT_SAMPLES).toFixed(2)} |`;
    };
    return [
      await counted(createPatient.name, () =>
        fetch(`${server.url}/fhir/R4/Patient`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/fhir+json' }, body: JSON.stringify(typicalPatient()) }),
      ),
      await counted(readPatient.name, (i) => fetch(`${server.url}/fhir/R4/Patient/${ids[i % ids.length]}`, { headers: { authorization: auth } })),
    ];
  } finally {
    await server.close();
  }
}

async function main(): Promise<void> {
  const database = DATABASE_URL ? 'PostgreSQL' : 'PGlite';
  const lines = [
    '',
    `## ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: request costs (bench/request-costs.ts, ${database})`,
    '',
    `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}; autocannon in the bench process, 16 connections, ${WARMUP} s warm-up, ${DURATION} s measured; load average at start ${loadavg()[0].toFixed(1)}.`,
    '',
    '| scenario | req/s | p50 ms | p99 ms | errors | server CPU µs/req | database CPU µs/req | load generator CPU µs/req |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...(await throughputRows()),
    '',
    '| request | statements per request |',
    '|---|---:|',
    ...(await statementRows()),
    '',
  ];
  console.log(lines.join('\n'));
  if (RESULTS) appendFileSync(RESULTS, lines.join('\n'));
}

await main();
