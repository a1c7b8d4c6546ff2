/**
 * Subscriptions: from a write's answer (its commit) to the first delivery attempt reaching a
 * loopback receiver, at WRITES_PER_SECOND Observation creates with SUBSCRIPTIONS matching
 * rest-hook Subscriptions; then creates per second at 8 concurrent clients in a project with
 * those Subscriptions and in one without, in alternating rounds. The receiver runs in a process of
 * its own (bench/loopback-receiver.ts), as a receiver on the loopback would. A round with
 * Subscriptions counts the deliveries that arrived within it and waits for the rest before the
 * next round, so no round works off another's backlog. CPU per create is split into this process
 * (server and clients), the receiver, and the database's backends (PostgreSQL). Runs an in-process
 * server on the embedded database, or on DATABASE_URL. `npx tsx bench/subscriptions.ts`.
 */
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createProject } from '../src/auth/account-writes.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { cpuSeconds, cpuSince, cpuSnapshot } from './process-cpu.js';

// Lower rates for a loaded machine: BENCH_WRITES_PER_SECOND, BENCH_SECONDS; BENCH_ROUNDS=0 measures latency only.
// SUBSCRIPTION_BUSY_SHARE_PERCENT is passed to the server (docs/configuration.md).
const WRITES_PER_SECOND = Number(process.env.BENCH_WRITES_PER_SECOND ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SUBSCRIPTIONS = 10;
const THROUGHPUT_SECONDS = 5;
const CLIENTS = 8;
// A CPU profile of this process during the first round with Subscriptions, written to this path.
const PROFILE = process.env.BENCH_PROFILE;

const receiver = fork(fileURLToPath(new URL('./loopback-receiver.ts', import.meta.url)), [], { execArgv: process.execArgv });
const ask = <T>(question: string) => new Promise<T>((resolve) => {
  receiver.once('message', (answer) => resolve(answer as T));
  receiver.send(question);
});
const { port } = await new Promise<{ port: number }>((resolve) => receiver.once('message', (message) => resolve(message as { port: number })));
const received = async () => (await ask<{ requests: number }>('count')).requests;
const hook = `http://127.0.0.1:${port}/hook`;

const databaseUrl = process.env.DATABASE_URL;
const server = await startServer(
  loadConfig({ PORT: '0', DATA_DIR: 'memory://', BASE_URL: 'http://localhost/', DATABASE_URL: databaseUrl, SUPER_ADMIN_PASSWORD: 'bench-password-0123456789', LOG_LEVEL: 'silent', OUTBOUND_ALLOW_PRIVATE_ADDRESSES: 'true', ADMISSION_MAX_WAIT_MS: '600000', ADMISSION_MAX_QUEUED: '100000', ADMISSION_MAX_QUEUED_PER_PROJECT: '100000', SUBSCRIPTION_BUSY_SHARE_PERCENT: process.env.SUBSCRIPTION_BUSY_SHARE_PERCENT }),
  { log: pino({ level: 'silent' }) },
);

type Write = (method: string, path: string, body: unknown) => Promise<{ id: string }>;

async function clientOf(name: string): Promise<Write> {
  const project = await createProject(server.services.auth, { name });
  const tokenAnswer = await fetch(`${server.url}/oauth2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: project.client.id, client_secret: project.client.secret }),
  });
  const { access_token } = (await tokenAnswer.json()) as { access_token: string };
  return async (method, path, body) => {
    const res = await fetch(`${server.url}/fhir/R4/${path}`, { method, headers: { Authorization: `Bearer ${access_token}`, 'Content-Type': 'application/fhir+json' }, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string };
  };
}

async function delivered(expected: number, withinMs: number): Promise<number> {
  const deadline = performance.now() + withinMs;
  let count = await received();
  while (count < expected && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    count = await received();
  }
  return count;
}

const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] } };
const subscribed = await clientOf('subscribed');
for (let i = 0; i < SUBSCRIPTIONS; i++) {
  await subscribed('POST', 'Subscription', { resourceType: 'Subscription', status: 'active', reason: 'bench', criteria: 'Observation?code=8867-4', channel: { type: 'rest-hook', endpoint: `${hook}?n=${i}`, payload: 'application/fhir+json' } });
}
const unsubscribed = await clientOf('unsubscribed');

async function latency(): Promise<void> {
  const committed = new Map<string, number>();
  const writes: Promise<void>[] = [];
  const cpuBefore = process.cpuUsage();
  const statementsBefore = server.services.db.statementCount;
  const requestsBefore = await received();
  const started = performance.now();
  for (let i = 0; i < WRITES_PER_SECOND * SECONDS; i++) {
    const due = started + (i * 1000) / WRITES_PER_SECOND;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    writes.push(subscribed('POST', 'Observation', observation).then(({ id }) => void committed.set(id, performance.timeOrigin + performance.now())));
  }
  await Promise.all(writes);
  const requests = (await delivered(requestsBefore + committed.size * SUBSCRIPTIONS, 60_000)) - requestsBefore;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const statements = server.services.db.statementCount - statementsBefore;
  const arrivals = new Map((await ask<{ arrivals: [string, number][] }>('arrivals')).arrivals);
  const latencies = [...committed].map(([id, at]) => (arrivals.get(id) ?? Infinity) - at).sort((a, b) => a - b);
  const percentile = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  const reached = [...committed.keys()].filter((id) => arrivals.has(id)).length;
  const { requests: total, distinct } = await ask<{ requests: number; distinct: number }>('count');
  console.log(`commit to first delivery attempt, ${WRITES_PER_SECOND} writes/s × ${SECONDS} s, ${SUBSCRIPTIONS} matching Subscriptions: p50 ${percentile(50)} ms, p95 ${percentile(95)} ms, p99 ${percentile(99)} ms (${reached}/${committed.size} resources delivered, ${requests} requests; since the start ${total} requests, ${total - distinct} of them repeats); per write with its ${SUBSCRIPTIONS} deliveries, until all arrived: CPU of this process (server and clients) ${(cpuMs / committed.size).toFixed(2)} ms, ${(statements / committed.size).toFixed(1)} SQL statements`);
}

interface Round {
  readonly creates: number;
  readonly deliveredInRound: number;
  readonly drainMs: number;
  /** CPU ms during the burst alone (not its drain): this process, the database and the receiver. */
  readonly burstCpuMs: number;
}

/** CLIENTS clients creating Observations for THROUGHPUT_SECONDS; with Subscriptions, then waits until every delivery arrived. */
async function round(write: Write, deliveries: number): Promise<Round> {
  const requestsBefore = await received();
  const cpuBefore = await cpuSnapshot(process.pid, databaseUrl);
  const receiverBefore = cpuSeconds(receiver.pid!);
  let creates = 0;
  const end = performance.now() + THROUGHPUT_SECONDS * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (performance.now() < end) {
      await write('POST', 'Observation', observation);
      creates++;
    }
  }));
  const deliveredInRound = (await received()) - requestsBefore;
  const burstCpu = await cpuSince(process.pid, databaseUrl, cpuBefore);
  const burstCpuMs = (burstCpu.server + burstCpu.database + cpuSeconds(receiver.pid!) - receiverBefore) * 1000;
  const drainStarted = performance.now();
  const all = (await delivered(requestsBefore + creates * deliveries, 120_000)) - requestsBefore;
  const drainMs = performance.now() - drainStarted;
  const cpu = await cpuSince(process.pid, databaseUrl, cpuBefore);
  const receiverCpu = cpuSeconds(receiver.pid!) - receiverBefore;
  const per = (seconds: number) => ((seconds * 1000) / creates).toFixed(2);
  const deliveryNote = deliveries === 0 ? '' : `, ${deliveredInRound} deliveries within the round (${((100 * deliveredInRound) / (creates * deliveries)).toFixed(0)}%), all ${all}/${creates * deliveries} ${drainMs.toFixed(0)} ms after it`;
  console.log(`  ${deliveries === 0 ? 'without' : 'with   '}: ${(creates / THROUGHPUT_SECONDS).toFixed(0)} creates/s${deliveryNote}; CPU per create (deliveries included) ms: this process ${per(cpu.server)}, database ${per(cpu.database)}, receiver ${per(receiverCpu)}; during the burst alone ${(burstCpuMs / creates).toFixed(2)} in all`);
  return { creates, deliveredInRound, drainMs, burstCpuMs };
}

await latency();
const rounds: { without: Round; with: Round }[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const without = await round(unsubscribed, 0);
  const profiler = PROFILE && i === 0 ? await profiling() : undefined;
  rounds.push({ without, with: await round(subscribed, SUBSCRIPTIONS) });
  if (profiler) writeFileSync(PROFILE!, JSON.stringify((await profiler.post('Profiler.stop')).profile));
}

async function profiling(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return session;
}
const sum = (pick: (r: { without: Round; with: Round }) => number) => rounds.reduce((total, r) => total + pick(r), 0);
const withRate = sum((r) => r.with.creates) / (ROUNDS * THROUGHPUT_SECONDS);
const withoutRate = sum((r) => r.without.creates) / (ROUNDS * THROUGHPUT_SECONDS);
// Sustained: the writes of a round over the time until their last delivery arrived.
const sustained = sum((r) => r.with.creates) / (sum((r) => THROUGHPUT_SECONDS * 1000 + r.with.drainMs) / 1000);
const drainSeconds = sum((r) => r.with.drainMs) / ROUNDS / 1000;
const backlog = sum((r) => r.with.creates * SUBSCRIPTIONS - r.with.deliveredInRound) / ROUNDS;
if (ROUNDS > 0) console.log(`creates/s at ${CLIENTS} clients during a ${THROUGHPUT_SECONDS} s burst, ${ROUNDS} alternating rounds: without Subscriptions ${withoutRate.toFixed(0)}, with ${SUBSCRIPTIONS} matching ${withRate.toFixed(0)} (${((100 * withRate) / withoutRate).toFixed(0)}%)`);
if (ROUNDS > 0) console.log(`backlog left at the end of a burst: ${backlog.toFixed(0)} deliveries on average, drained in ${drainSeconds.toFixed(1)} s (${(backlog / Math.max(drainSeconds, 0.001)).toFixed(0)} deliveries/s); sustained, the burst's creates over the time until their last delivery arrived: ${sustained.toFixed(0)}/s (${((100 * sustained) / withoutRate).toFixed(0)}% of without)`);
// On saturated cores the write rate goes as 1 / (CPU per write during the burst, every process of
// the bench counted), whatever else runs on the machine: the load-independent reading of the ratio.
const burstCpuWithout = sum((r) => r.without.burstCpuMs) / sum((r) => r.without.creates);
const burstCpuWith = sum((r) => r.with.burstCpuMs) / sum((r) => r.with.creates);
if (ROUNDS > 0) console.log(`CPU per create during the burst (this process, database, receiver): without ${burstCpuWithout.toFixed(2)} ms, with ${burstCpuWith.toFixed(2)} ms: on saturated cores, creates with Subscriptions at most ${((100 * burstCpuWithout) / burstCpuWith).toFixed(0)}% of those without`);
const whole = await ask<{ requests: number; distinct: number }>('count');
console.log(`receiver, whole run: ${whole.requests} requests, ${whole.requests - whole.distinct} of them repeats of an event id (attempts made again)`);
await server.close();
receiver.disconnect();
