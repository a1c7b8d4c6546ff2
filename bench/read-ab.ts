/**
 * `npx tsx bench/read-ab.ts` (PostgreSQL, BENCH_DATABASE_URL): read Patient by id at 16
 * connections on the servers of several source trees (BENCH_TREES=/work/main,. each runs as its own
 * `npm start` does, flint-process.ts serverArgs) and on the bare pg baseline (bench/bare-pg-server.ts), all started at once on one
 * database and loaded in turn (each round starting with the next), BENCH_ROUNDS rounds of
 * BENCH_SLICE seconds each: an A/B on a shared machine, where the load drifts between runs made one
 * after another. Prints, per server, requests per second and the CPU time of its process per
 * request, counted over its own slices only; BENCH_RESULTS appends the table to a file (default:
 * print only). BENCH_READ=graphql reads each Patient by id through `$graphql` instead (the query of
 * bench/run.ts's GraphQL scenario), Flint's servers only: the bare server answers REST reads.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { launchBarePg } from './bare-pg.js';
import { typicalPatient } from './fixtures.js';
import { answering, clientCredentialsToken, newProjectClient, serverArgs, stopFlint } from './flint-process.js';
import { cpuSeconds } from './process-cpu.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const PORT = Number(process.env.BENCH_PORT ?? 18100);
const TREES = (process.env.BENCH_TREES ?? '.').split(',');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SLICE = Number(process.env.BENCH_SLICE ?? 3);
const ADMIN = { id: 'read-ab-admin', secret: 'read-ab-secret-0123456789' };
const GRAPHQL = process.env.BENCH_READ === 'graphql';
const PATIENT_QUERY = 'query ($id: ID!) { Patient(id: $id) { id name { family given } gender birthDate } }';

interface Target {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
  requests: number;
  seconds: number;
  cpu: number;
}

/**
 * Every server has the first one's base URL: the access token the first one issues names it as its
 * issuer, which each server checks (with its own port's URL every other server answered 401).
 */
const BASE_URL = `http://127.0.0.1:${PORT}/`;

function launch(tree: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, serverArgs(tree), {
    cwd: tree,
    env: { ...process.env, PORT: String(port), BASE_URL, DATABASE_URL, LOG_LEVEL: 'info', SUPER_ADMIN_CLIENT_ID: ADMIN.id, SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return answering(child, port, `Flint of ${tree}`);
}

async function seed(base: string, auth: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${base}/fhir/R4/Patient`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/fhir+json' }, body: JSON.stringify(typicalPatient()) });
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`);
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}

function slice(target: Target, ids: readonly string[], auth: string, seconds: number): Promise<autocannon.Result> {
  let i = 0;
  const requests = GRAPHQL
    ? [
        {
          method: 'POST' as const,
          path: '/fhir/R4/$graphql',
          headers: { authorization: auth, 'content-type': 'application/json' },
          setupRequest: (req: autocannon.Request) => ({ ...req, body: JSON.stringify({ query: PATIENT_QUERY, variables: { id: ids[i++ % ids.length] } }) }),
        },
      ]
    : [{ headers: { authorization: auth }, setupRequest: (req: autocannon.Request) => ({ ...req, path: `/fhir/R4/Patient/${ids[i++ % ids.length]}` }) }];
  return new Promise((resolve, reject) =>
    autocannon({ url: `http://127.0.0.1:${target.port}`, connections: 16, duration: seconds, requests }, (error, result) => (error ? reject(error) : resolve(result))),
  );
}

async function measure(targets: Target[], ids: readonly string[], auth: string): Promise<void> {
  for (const target of targets) {
    const warmUp = await slice(target, ids, auth, SLICE);
    if (warmUp['2xx'] === 0) throw new Error(`${target.name} answered no read (${warmUp.non2xx} answers not 2xx: ${JSON.stringify(warmUp.statusCodeStats)})`);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with the next server: none is always first after another's slice.
    for (const target of [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)]) {
      const before = cpuSeconds(target.child.pid!);
      const result = await slice(target, ids, auth, SLICE);
      // A server that answers errors is not measuring reads: stop rather than print its rate.
      if (result.non2xx + result.errors > 0) throw new Error(`${target.name}: ${result.non2xx} answers not 2xx and ${result.errors} errors`);
      target.cpu += cpuSeconds(target.child.pid!) - before;
      target.requests += result.requests.total;
      target.seconds += SLICE;
    }
  }
}

async function main(): Promise<void> {
  if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to a PostgreSQL database');
  const started = loadavg()[0];
  const targets: Target[] = [];
  try {
    // One after another: each makes the super admin client at its start.
    for (const [i, tree] of TREES.entries()) targets.push({ name: tree, port: PORT + i, child: await launch(tree, PORT + i), requests: 0, seconds: 0, cpu: 0 });
    if (!GRAPHQL) {
      const bare = await launchBarePg(PORT + TREES.length, DATABASE_URL, process.env.DATABASE_POOL_SIZE ?? '10');
      targets.push({ name: 'bare pg', port: PORT + TREES.length, child: bare, requests: 0, seconds: 0, cpu: 0 });
    }
    const base = `http://127.0.0.1:${PORT}`;
    const client = await newProjectClient(base, await clientCredentialsToken(base, ADMIN), 'Read A/B');
    const auth = `Bearer ${await clientCredentialsToken(base, client)}`;
    await measure(targets, await seed(base, auth, 1000), auth);
  } finally {
    await Promise.all(targets.map((target) => stopFlint(target.child)));
  }
  // The last is the bare server (REST), or for GraphQL the first tree.
  const bare = GRAPHQL ? targets[0] : targets[targets.length - 1];
  const rate = (target: Target) => target.requests / target.seconds;
  const lines = [
    '',
    `Read Patient by id${GRAPHQL ? ' through $graphql' : ''}, 16 connections, ${ROUNDS} rounds of ${SLICE} s per server, interleaved (bench/read-ab.ts); load average ${started.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end.`,
    '',
    `| server | req/s | server CPU µs/req | ÷ ${bare.name} req/s |`,
    '|---|---:|---:|---:|',
    ...targets.map((t) => `| ${t.name} | ${Math.round(rate(t))} | ${Math.round((t.cpu * 1e6) / Math.max(1, t.requests))} | ${Math.round((100 * rate(t)) / rate(bare))}% |`),
    '',
  ];
  console.log(lines.join('\n'));
  if (process.env.BENCH_RESULTS) appendFileSync(process.env.BENCH_RESULTS, lines.join('\n'));
}

await main();
