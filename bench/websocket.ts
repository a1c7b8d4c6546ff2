/**
 * WebSocket subscriptions: from a write's answer (its commit) to its event reaching each bound
 * socket, at WRITES_PER_SECOND Observation creates with SUBSCRIPTIONS matching websocket
 * Subscriptions, one socket each (one `ws` client per Subscription, in this process). Runs an
 * in-process server on the embedded database, or on DATABASE_URL.
 * `npx tsx bench/websocket.ts` (WRITES_PER_SECOND=n to change the rate); prints its figures.
 */
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { createProject } from '../src/auth/account-writes.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';

const WRITES_PER_SECOND = Number(process.env.WRITES_PER_SECOND ?? 50);
const SECONDS = 10;
const SUBSCRIPTIONS = 10;

const server = await startServer(
  loadConfig({ PORT: '0', DATA_DIR: 'memory://', BASE_URL: 'http://localhost/', DATABASE_URL: process.env.DATABASE_URL, SUPER_ADMIN_PASSWORD: 'bench-password-0123456789', LOG_LEVEL: 'silent', ADMISSION_MAX_WAIT_MS: '600000', ADMISSION_MAX_QUEUED: '100000', ADMISSION_MAX_QUEUED_PER_PROJECT: '100000' }),
  { log: pino({ level: 'silent' }) },
);
const project = await createProject(server.services.auth, { name: 'websocket bench' });
const tokenAnswer = await fetch(`${server.url}/oauth2/token`, {
  method: 'POST',
  body: new URLSearchParams({ grant_type: 'client_credentials', client_id: project.client.id, client_secret: project.client.secret }),
});
const { access_token } = (await tokenAnswer.json()) as { access_token: string };
async function call(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}/fhir/R4/${path}`, { method, headers: { Authorization: `Bearer ${access_token}`, 'Content-Type': 'application/fhir+json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Arrival time of each event at each socket, by resource id. */
const arrivals = new Map<string, number[]>();
for (let i = 0; i < SUBSCRIPTIONS; i++) {
  const subscription = await call('POST', 'Subscription', { resourceType: 'Subscription', status: 'active', reason: 'bench', criteria: 'Observation?code=8867-4', channel: { type: 'websocket' } });
  const binding = await call('GET', `Subscription/${subscription.id}/$get-ws-binding-token`);
  const token = binding.parameter.find((p: { name: string }) => p.name === 'token').valueString;
  const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/ws/subscriptions-r4`);
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'bind-with-token', payload: { token } }));
  await new Promise((resolve) => socket.once('message', resolve));
  socket.on('message', (data) => {
    const bundle = JSON.parse(String(data));
    const id = bundle.entry?.[1]?.resource?.id as string | undefined;
    if (id) arrivals.set(id, [...(arrivals.get(id) ?? []), performance.now()]);
  });
}

const observation = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] } };
const committed = new Map<string, number>();
const writes: Promise<void>[] = [];
const started = performance.now();
for (let i = 0; i < WRITES_PER_SECOND * SECONDS; i++) {
  const due = started + (i * 1000) / WRITES_PER_SECOND;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
  writes.push(call('POST', 'Observation', observation).then((created: { id: string }) => void committed.set(created.id, performance.now())));
}
await Promise.all(writes);
const expected = committed.size * SUBSCRIPTIONS;
const deadline = performance.now() + 30_000;
const count = () => [...arrivals.values()].reduce((sum, list) => sum + list.length, 0);
while (count() < expected && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));

const latencies = [...committed].flatMap(([id, at]) => (arrivals.get(id) ?? []).map((arrived) => arrived - at)).sort((a, b) => a - b);
const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1);
console.log(`${server.services.db.kind}: ${committed.size} creates at ${WRITES_PER_SECOND}/s, ${SUBSCRIPTIONS} websocket Subscriptions: ${count()} of ${expected} events arrived`);
console.log(`commit to socket: p50 ${quantile(0.5)} ms, p95 ${quantile(0.95)} ms, max ${quantile(1)} ms`);
process.exit(0);
