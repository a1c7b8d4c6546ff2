/**
 * Subscriptions: from a write's answer (its commit) to the first delivery attempt reaching a
 * loopback receiver, at WRITES_PER_SECOND Observation creates with SUBSCRIPTIONS matching
 * rest-hook Subscriptions; then creates per second at 8 concurrent clients in a project with
 * those Subscriptions and in one without. Runs an in-process server on the embedded database, or
 * on DATABASE_URL. `npx tsx bench/subscriptions.ts`; prints its figures.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createProject } from '../src/auth/account-writes.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';

// Lower rates for a loaded machine: BENCH_WRITES_PER_SECOND, BENCH_SECONDS.
const WRITES_PER_SECOND = Number(process.env.BENCH_WRITES_PER_SECOND ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SUBSCRIPTIONS = 10;
const THROUGHPUT_SECONDS = 5;

const arrivals = new Map<string, number>();
let requests = 0;
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    requests++;
    const id = (JSON.parse(body) as { id: string }).id;
    if (!arrivals.has(id)) arrivals.set(id, performance.now());
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const server = await startServer(
  loadConfig({ PORT: '0', DATA_DIR: 'memory://', BASE_URL: 'http://localhost/', DATABASE_URL: process.env.DATABASE_URL, SUPER_ADMIN_PASSWORD: 'bench-password-0123456789', LOG_LEVEL: 'silent', OUTBOUND_ALLOW_PRIVATE_ADDRESSES: 'true', ADMISSION_MAX_WAIT_MS: '600000', ADMISSION_MAX_QUEUED: '100000', ADMISSION_MAX_QUEUED_PER_PROJECT: '100000' }),
  { log: pino({ level: 'silent' }) },
);

async function clientOf(name: string): Promise<(method: string, path: string, body: unknown) => Promise<{ id: string }>> {
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

const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] } };
const subscribed = await clientOf('subscribed');
for (let i = 0; i < SUBSCRIPTIONS; i++) {
  await subscribed('POST', 'Subscription', { resourceType: 'Subscription', status: 'active', reason: 'bench', criteria: 'Observation?code=8867-4', channel: { type: 'rest-hook', endpoint: `${hook}?n=${i}`, payload: 'application/fhir+json' } });
}

const committed = new Map<string, number>();
const writes: Promise<void>[] = [];
const cpuBefore = process.cpuUsage();
const statementsBefore = server.services.db.statementCount;
const started = performance.now();
for (let i = 0; i < WRITES_PER_SECOND * SECONDS; i++) {
  const due = started + (i * 1000) / WRITES_PER_SECOND;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  writes.push(subscribed('POST', 'Observation', observation).then(({ id }) => void committed.set(id, performance.now())));
}
await Promise.all(writes);
const deadline = performance.now() + 60_000;
while (requests < committed.size * SUBSCRIPTIONS && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
const cpu = process.cpuUsage(cpuBefore);
const cpuMs = (cpu.user + cpu.system) / 1000;
const statements = server.services.db.statementCount - statementsBefore;
const latencies = [...committed].map(([id, at]) => (arrivals.get(id) ?? Infinity) - at).sort((a, b) => a - b);
const percentile = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
console.log(`commit to first delivery attempt, ${WRITES_PER_SECOND} writes/s × ${SECONDS} s, ${SUBSCRIPTIONS} matching Subscriptions: p50 ${percentile(50)} ms, p95 ${percentile(95)} ms, p99 ${percentile(99)} ms (${arrivals.size}/${committed.size} resources delivered, ${requests} requests); per write with its ${SUBSCRIPTIONS} deliveries, until all arrived: CPU of this process (server, client and receiver) ${(cpuMs / committed.size).toFixed(2)} ms, ${(statements / committed.size).toFixed(1)} SQL statements`);

async function createsPerSecond(write: (method: string, path: string, body: unknown) => Promise<unknown>): Promise<number> {
  let done = 0;
  const before = process.cpuUsage();
  const end = performance.now() + THROUGHPUT_SECONDS * 1000;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (performance.now() < end) {
      await write('POST', 'Observation', observation);
      done++;
    }
  }));
  const used = process.cpuUsage(before);
  console.log(`  ${done} creates, CPU ${((used.user + used.system) / 1000 / done).toFixed(2)} ms per create (deliveries included)`);
  return done / THROUGHPUT_SECONDS;
}
const without = await createsPerSecond(await clientOf('unsubscribed'));
const withSubscriptions = await createsPerSecond(subscribed);
console.log(`creates/s at 8 clients: without Subscriptions ${without.toFixed(0)}, with ${SUBSCRIPTIONS} matching ${withSubscriptions.toFixed(0)} (${((100 * withSubscriptions) / without).toFixed(0)}%)`);
await server.close();
receiver.close();
