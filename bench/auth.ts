/**
 * `npx tsx bench/auth.ts`: the identity (authentication and token) figures, on the embedded database (or on
 * PostgreSQL with BENCH_DATABASE_URL), appended to bench/RESULTS.md (or to the file named by
 * BENCH_RESULTS; BENCH_RESULTS=none prints only). BENCH_SCENARIOS picks some of
 * `token,read,userinfo,inprocess` (all by default).
 *
 * - token issue by client credentials (autocannon, 16 connections): target ≥1,000/s
 * - read Patient by id with a bearer token, and the in-process cost of authenticating a request
 *   (cached token; first sight of a token): target under 0.2 ms added per request
 * - GET /oauth2/userinfo with a cached external token (fake IDP on loopback): target ≥3,000/s
 *
 * Next to each throughput figure: the server process's CPU time per request (all its threads, read
 * from /proc on Linux), which a loaded machine changes far less than it changes requests/s. On
 * PostgreSQL the database's own CPU is not in it.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import autocannon from 'autocannon';
import { pino } from 'pino';
import { authenticateRequest } from '../src/auth/authenticate.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { startFakeIdp } from '../test/auth/fake-idp.js';
import { typicalPatient } from './fixtures.js';
import { launchFlint } from './flint-process.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const PORT = Number(process.env.BENCH_PORT ?? 18081);
const BASE = `http://127.0.0.1:${PORT}`;
const CLIENT = { id: 'bench-client', secret: 'bench-client-secret' };
const RESULTS = process.env.BENCH_RESULTS || new URL('./RESULTS.md', import.meta.url).pathname;
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'token,read,userinfo,inprocess').split(','));
const DB_ENV = process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : { DATABASE_URL: '', DATA_DIR: 'memory://' };

function load(options: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) =>
    autocannon({ connections: 16, duration: DURATION, ...options }, (error, result) => (error ? reject(error) : resolve(result))),
  );
}

async function startFlint(env: Record<string, string>): Promise<ChildProcess> {
  return launchFlint(PORT, { LOG_LEVEL: 'warn', SUPER_ADMIN_CLIENT_ID: CLIENT.id, SUPER_ADMIN_CLIENT_SECRET: CLIENT.secret, ...DB_ENV, ...env });
}

const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT.id, client_secret: CLIENT.secret }).toString();

async function main(): Promise<void> {
  const idp = await startFakeIdp();
  const child = await startFlint({ EXTERNAL_AUTH_PROVIDERS: JSON.stringify([{ issuer: idp.issuer, userInfoUrl: idp.userInfoUrl }]) });
  const rows: string[] = [];
  const row = async (name: string, options: autocannon.Options, target: string) => {
    const before = processCpu(child.pid!);
    const result = await load(options);
    const after = processCpu(child.pid!);
    const served = Math.max(1, result.requests.total);
    const cpu = (ms: number) => ((ms * 1000) / served).toFixed(0);
    const busiest = busiestOtherThread(child.pid!, before.threads, after.threads);
    const line = `| ${name} | ${Math.round(result.requests.average)} | ${result.latency.p50} | ${result.latency.p99} | ${result.errors + result.non2xx} | ${cpu(after.total - before.total)} (main ${cpu(after.main - before.main)}, busiest other thread ${cpu(busiest)}) | ${target} |`;
    console.log(line);
    rows.push(line);
  };
  try {
    const tokenRequest = { method: 'POST' as const, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form };
    if (SCENARIOS.has('token')) {
      await load({ url: `${BASE}/oauth2/token`, duration: 2, requests: [tokenRequest] });
      await row('token by client credentials', { url: `${BASE}/oauth2/token`, requests: [tokenRequest] }, '≥1,000/s');
    }

    const token = ((await (await fetch(`${BASE}/oauth2/token`, { method: 'POST', headers: tokenRequest.headers, body: form })).json()) as { access_token: string }).access_token;
    const auth = { authorization: `Bearer ${token}` };
    const patient = (await (await fetch(`${BASE}/fhir/R4/Patient`, { method: 'POST', headers: { ...auth, 'content-type': 'application/fhir+json' }, body: JSON.stringify(typicalPatient()) })).json()) as { id: string };
    if (SCENARIOS.has('read')) {
      await row('read Patient by id (bearer)', { url: `${BASE}/fhir/R4/Patient/${patient.id}`, headers: auth }, 'see in-process cost below');
    }

    // An invited user with an externalId, and an external token for it.
    const sub = `bench|${Date.now()}`;
    const project = (await (await fetch(`${BASE}/fhir/R4/Project/$init`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'name', valueString: 'bench' }, { name: 'ownerEmail', valueString: `${sub.replace('|', '-')}@example.org` }] }),
    })).json()) as { id: string };
    await fetch(`${BASE}/admin/projects/${project.id}/invite`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ resourceType: 'Practitioner', firstName: 'B', lastName: 'U', externalId: sub }),
    });
    const external = await idp.issue({ sub });
    const calls = idp.userinfoCalls;
    if (SCENARIOS.has('userinfo')) {
      await row('userinfo, cached external token', { url: `${BASE}/oauth2/userinfo`, headers: { authorization: `Bearer ${external}` } }, '≥3,000/s');
      console.log(`provider userinfo calls during that run: ${idp.userinfoCalls - calls}`);
    }
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    await idp.close();
  }
  if (!SCENARIOS.has('inprocess')) {
    record(rows, []);
    return;
  }

  // In-process: what authentication adds to a request.
  const server = await startServer(
    loadConfig({ PORT: '0', BASE_URL: 'http://localhost/', LOG_LEVEL: 'silent', SUPER_ADMIN_CLIENT_ID: CLIENT.id, SUPER_ADMIN_CLIENT_SECRET: CLIENT.secret, ...DB_ENV, DATA_DIR: 'memory://' }),
    { log: pino({ level: 'silent' }) },
  );
  try {
    const res = await fetch(`${server.url}/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    const token = ((await res.json()) as { access_token: string }).access_token;
    const request = new Request(`${server.url}/fhir/R4/Patient/x`, { headers: { authorization: `Bearer ${token}` } });
    const auth = server.services.auth;
    const time = async (n: number, before?: () => void) => {
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        before?.();
        await authenticateRequest(auth, request);
      }
      return ((performance.now() - start) / n) * 1000;
    };
    await time(1000);
    const cached = await time(100_000);
    const uncached = await time(500, () => (auth.identities as unknown as { entries: Map<string, unknown> }).entries.clear());
    const signatureOnly = await (async () => {
      const start = performance.now();
      for (let i = 0; i < 2000; i++) await auth.signer.verify(token);
      return ((performance.now() - start) / 2000) * 1000;
    })();
    const lines = [
      `| authenticate a request, token seen within the minute (in-process) | ${cached.toFixed(2)} µs |`,
      `| authenticate a request, first sight of the token: ES256 verify + Login, membership, project reads | ${uncached.toFixed(0)} µs |`,
      `| ES256 signature and claims check alone | ${signatureOnly.toFixed(0)} µs |`,
    ];
    lines.forEach((line) => console.log(line));
    record(rows, lines);
  } finally {
    await server.close();
  }
}

/**
 * CPU milliseconds a process has used so far, in all its threads and in its main thread
 * (/proc/<pid>/task/<tid>/stat, utime + stime in clock ticks of 10 ms). Zeros elsewhere than Linux.
 */
function processCpu(pid: number): { total: number; main: number; threads: Map<string, number> } {
  const ticks = (tid: string) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const threads = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) threads.set(tid, ticks(tid));
  } catch {
    return { total: 0, main: 0, threads };
  }
  return { total: [...threads.values()].reduce((a, b) => a + b, 0), main: threads.get(String(pid)) ?? 0, threads };
}

/** The thread that worked most between two readings other than the main one (PGlite's worker on the embedded database). */
function busiestOtherThread(pid: number, before: Map<string, number>, after: Map<string, number>): number {
  let most = 0;
  for (const [tid, ms] of after) if (tid !== String(pid)) most = Math.max(most, ms - (before.get(tid) ?? 0));
  return most;
}

function record(rows: string[], costs: string[]): void {
  if (RESULTS === 'none') return;
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  appendFileSync(
    RESULTS,
    [
      '',
      `## ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: identity (bench/auth.ts, ${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`,
      '',
      `${machine}; autocannon, 16 connections, ${DURATION} s per scenario, client, server and database on one machine.`,
      '',
      '| scenario | req/s | p50 ms | p99 ms | errors | server CPU µs/request | target |',
      '|---|---:|---:|---:|---:|---:|---|',
      ...rows,
      '',
      ...(costs.length > 0 ? ['| cost of authentication | per request |', '|---|---:|', ...costs, ''] : []),
    ].join('\n'),
  );
}

await main();
