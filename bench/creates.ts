/**
 * `npx tsx bench/creates.ts` (PostgreSQL, BENCH_DATABASE_URL): creates of Patients and
 * Observations at 16 connections, an A/B of source trees or settings on a shared machine. Each
 * variant of BENCH_VARIANTS runs its own server in turn, round after round (BENCH_ROUNDS, default
 * 2), on the same database; per scenario it prints requests per second, and per create the CPU
 * time of the server process and of the database's backends, the database's commits (from
 * pg_stat_database: fewer than one when creates are written together), and where the rest of the
 * machine's time went (bench/machine-time.ts: on a quiet machine, its idle part is what the create
 * pipeline leaves unused).
 *
 * BENCH_VARIANTS: `name=tree[ KEY=VALUE...]` separated by `;`, e.g.
 * `main=/work/main;this=.;this-1=. CREATE_GROUPS_IN_FLIGHT=1` (default `this=.`).
 * A variant's DATABASE_URL setting names its own database. Scenarios (BENCH_SCENARIOS, all by
 * default): `patient`, `observation`, and `subscribed` (an Observation create in a project with an
 * active rest-hook Subscription: every create is recorded in the outbox, none matches, so the
 * figures are the writes' own, without deliveries). BENCH_RESULTS names a file to append to (default: print only).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { typicalObservation, typicalPatient } from './fixtures.js';
import { answering, clientCredentialsToken, newProjectClient, serverArgs, stopFlint } from './flint-process.js';
import { sampleBackendWaits } from './backend-waits.js';
import { machineSnapshot, machineTimeSince } from './machine-time.js';
import { cpuSince, cpuSnapshot } from './process-cpu.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
if (!DATABASE_URL) throw new Error('BENCH_DATABASE_URL names the PostgreSQL database to write to');
const PORT = Number(process.env.BENCH_PORT ?? 18087);
const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'patient,observation,subscribed').split(','));
const ADMIN = { id: 'creates-admin', secret: 'creates-admin-secret-0123456789' };

interface Variant {
  readonly name: string;
  readonly tree: string;
  readonly env: Record<string, string>;
}

const VARIANTS: Variant[] = (process.env.BENCH_VARIANTS ?? 'this=.').split(';').map((spec) => {
  const at = spec.indexOf('=');
  const [tree, ...settings] = (at < 0 ? '.' : spec.slice(at + 1)).trim().split(/\s+/);
  const env = Object.fromEntries(settings.map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]));
  return { name: at < 0 ? spec : spec.slice(0, at), tree, env };
});

function launch(variant: Variant): Promise<ChildProcess> {
  const child = spawn(process.execPath, serverArgs(variant.tree), {
    cwd: variant.tree,
    env: { ...process.env, PORT: String(PORT), LOG_LEVEL: 'warn', DATABASE_URL, SUPER_ADMIN_CLIENT_ID: ADMIN.id, SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret, ...variant.env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return answering(child, PORT, `Flint of ${variant.tree}`);
}

/** The database's committed transactions so far (statistics flushed by idle backends within a second). */
async function commits(databaseUrl: string): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()');
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

function load(body: () => string, auth: string, path: string, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${PORT}`,
        connections: 16,
        duration: seconds,
        requests: [{ method: 'POST', path, headers: { authorization: auth, 'content-type': 'application/fhir+json' }, setupRequest: (req) => ({ ...req, body: body() }) }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    ),
  );
}

async function post(auth: string, type: string, resource: unknown): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${PORT}/fhir/R4/${type}`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/fhir+json' }, body: JSON.stringify(resource) });
  if (res.status !== 201) throw new Error(`${type} create failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function projectAuth(): Promise<string> {
  const base = `http://127.0.0.1:${PORT}`;
  const client = await newProjectClient(base, await clientCredentialsToken(base, ADMIN), 'Creates');
  return `Bearer ${await clientCredentialsToken(base, client)}`;
}

/** One scenario after its warm-up: a table row. */
async function measure(label: string, child: ChildProcess, databaseUrl: string, auth: string, type: string, body: () => string): Promise<string> {
  await load(body, auth, `/fhir/R4/${type}`, WARMUP);
  const commitsBefore = await commits(databaseUrl);
  const before = await cpuSnapshot(child.pid!, databaseUrl);
  const machineBefore = machineSnapshot();
  const waits = await sampleBackendWaits(databaseUrl, new URL(databaseUrl).pathname.slice(1));
  const result = await load(body, auth, `/fhir/R4/${type}`, DURATION);
  const waited = await waits();
  const machine = machineTimeSince(machineBefore, { server: [child.pid!], database: [...before.database.keys()], loadGenerator: [process.pid] });
  const used = await cpuSince(child.pid!, databaseUrl, before);
  const committed = (await commits(databaseUrl)) - commitsBefore;
  const served = Math.max(1, result.requests.total);
  const us = (seconds: number) => Math.round((seconds * 1e6) / served);
  const machineParts = [machine.named.loadGenerator, machine.postgresOwn, machine.otherProcesses, machine.interrupts, machine.idle, machine.total];
  const backends = [waited.running, waited.walFlush, waited.otherWaits].map((n) => n.toFixed(1)).join(' / ');
  const wal = `${(waited.walBytes / served / 1024).toFixed(1)} (${(waited.fullPageImages / served).toFixed(1)})`;
  return `| ${label} | ${Math.round(result.requests.average)} | ${result.errors + result.non2xx} | ${us(used.server)} | ${us(used.database)} | ${(committed / served).toFixed(2)} | ${machineParts.map(us).join(' | ')} | ${backends} | ${wal} |`;
}

async function runVariant(variant: Variant, receiverUrl: string): Promise<string[]> {
  const child = await launch(variant);
  const databaseUrl = variant.env.DATABASE_URL ?? DATABASE_URL!;
  const rows: string[] = [];
  try {
    const auth = await projectAuth();
    const patients = await Promise.all(Array.from({ length: 50 }, () => post(auth, 'Patient', typicalPatient())));
    let i = 0;
    const observation = () => JSON.stringify(typicalObservation(patients[i++ % patients.length]));
    if (SCENARIOS.has('patient')) rows.push(await measure(`${variant.name}: create Patient`, child, databaseUrl, auth, 'Patient', () => JSON.stringify(typicalPatient())));
    if (SCENARIOS.has('observation')) rows.push(await measure(`${variant.name}: create Observation`, child, databaseUrl, auth, 'Observation', observation));
    if (SCENARIOS.has('subscribed')) {
      const subscribed = await projectAuth();
      await post(subscribed, 'Subscription', {
        resourceType: 'Subscription', status: 'active', reason: 'bench', criteria: 'Observation?code=no-such-code',
        channel: { type: 'rest-hook', endpoint: receiverUrl, payload: 'application/fhir+json' },
      });
      const own = await Promise.all(Array.from({ length: 50 }, () => post(subscribed, 'Patient', typicalPatient())));
      let j = 0;
      rows.push(await measure(`${variant.name}: create Observation, project with a Subscription`, child, databaseUrl, subscribed, 'Observation', () => JSON.stringify(typicalObservation(own[j++ % own.length]))));
    }
  } finally {
    await stopFlint(child);
  }
  return rows;
}

async function main(): Promise<void> {
  const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end()));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const header = [
    '',
    `## ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: creates A/B (bench/creates.ts, PostgreSQL)`,
    '',
    `${cpus().length} cores, Node ${process.version}; autocannon in the bench process, 16 connections, ${WARMUP} s warm-up, ${DURATION} s measured, ${ROUNDS} rounds; variants ${VARIANTS.map((v) => `${v.name} = ${v.tree}${Object.keys(v.env).length ? ` (${Object.entries(v.env).map(([k, v]) => `${k}=${v}`).join(', ')})` : ''}`).join('; ')}; load average at start ${loadavg()[0].toFixed(1)}.`,
    '',
    'Per create, µs: server and database (its backends) CPU; the rest of the machine\'s time (cores × wall time: machine): the bench process (load generator), PostgreSQL\'s own processes (WAL writer, checkpointer, background writer: cluster-wide), every other process, interrupts (irq, softirq, steal), idle (with I/O wait). Backends: how many of the database\'s backends were, on average, running a statement / waiting for the WAL flush of a commit / waiting on anything else (bench/backend-waits.ts). WAL: KB the whole cluster wrote per create (full-page images per create): every database\'s, so only a quiet machine\'s figure is the creates\' own.',
    '',
    '| variant: scenario | req/s | errors | server CPU µs/create | database CPU µs/create | commits/create | load generator | PostgreSQL own | other processes | interrupts | idle | machine | backends | WAL |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  console.log(header.join('\n'));
  const rows: string[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const variant of VARIANTS) {
        for (const row of await runVariant(variant, receiverUrl)) {
          console.log(row);
          rows.push(row);
        }
      }
    }
  } finally {
    receiver.close();
  }
  const footer = `\nLoad average at the end ${loadavg()[0].toFixed(1)}.\n`;
  console.log(footer);
  if (process.env.BENCH_RESULTS) appendFileSync(process.env.BENCH_RESULTS, [...header, ...rows, footer].join('\n'));
}

await main();
