/**
 * `npx tsx bench/bots.ts`: a warm `Bot/$execute` (the sandbox runtime already prepared), on the
 * embedded database (or PostgreSQL with BENCH_DATABASE_URL). Two bots: one that returns its input
 * (the sandbox and HTTP cost alone) and one that makes one FHIR call through its MedplumClient
 * (createResource). Sequential latency (p50, p95) and throughput with BENCH_CONNECTIONS
 * concurrent callers. Figures are appended to bench/RESULTS.md (BENCH_RESULTS=none prints only).
 */
import { appendFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { pino } from 'pino';
import { createProject } from '../src/auth/account-writes.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const RESULTS = process.env.BENCH_RESULTS || new URL('./RESULTS.md', import.meta.url).pathname;
const DB_ENV = process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : { DATABASE_URL: '', DATA_DIR: 'memory://' };

const BOTS = {
  echo: 'exports.handler = async (medplum, event) => event.input;',
  'one FHIR call': 'exports.handler = async (medplum) => (await medplum.createResource({ resourceType: "Patient" })).id;',
};

const config = loadConfig({ ...process.env, ...DB_ENV, PORT: '0', LOG_LEVEL: 'silent' });
const server = await startServer(config, { log: pino({ level: 'silent' }) });
const project = await createProject(server.services.auth, { id: crypto.randomUUID(), name: 'bench bots' });
const token = await tokenOf(server.url, project.client.id, project.client.secret);
const fhir = `${server.url}/fhir/R4`;
const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };

async function tokenOf(base: string, clientId: string, clientSecret: string): Promise<string> {
  const res = await fetch(`${base}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }) });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function deploy(code: string): Promise<string> {
  const bot = (await (await fetch(`${fhir}/Bot`, { method: 'POST', headers, body: JSON.stringify({ resourceType: 'Bot', name: 'bench' }) })).json()) as { id: string };
  await fetch(`${fhir}/Bot/${bot.id}/$deploy`, { method: 'POST', headers, body: JSON.stringify({ code }) });
  return bot.id;
}

async function executeOnce(id: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${fhir}/Bot/${id}/$execute`, { method: 'POST', headers, body: '{"n":1}' });
  await res.text();
  if (res.status !== 200) throw new Error(`$execute answered ${res.status}`);
  return performance.now() - started;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const lines: string[] = [];
for (const [name, code] of Object.entries(BOTS)) {
  const id = await deploy(code);
  for (let i = 0; i < 10; i++) await executeOnce(id);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await executeOnce(id));
  times.sort((a, b) => a - b);
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    for (let i = 0; i < RUNS / CONNECTIONS; i++) await executeOnce(id);
  }));
  const perSecond = RUNS / ((performance.now() - started) / 1000);
  lines.push(`| ${name} | ${percentile(times, 50).toFixed(1)} ms | ${percentile(times, 95).toFixed(1)} ms | ${perSecond.toFixed(0)}/s (${CONNECTIONS} callers, BOT_WORKERS=${config.botWorkers}) |`);
}
await server.close();

const report = [
  '',
  `## Bots: warm Bot/$execute (${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, ${DB_ENV.DATABASE_URL ? 'PostgreSQL' : 'embedded PGlite'})`,
  '',
  'Shared machine, other work running: noisy figures, not a basis for tuning.',
  '',
  '| bot | p50 | p95 | throughput |',
  '|---|---|---|---|',
  ...lines,
  '',
].join('\n');
console.log(report);
if (RESULTS !== 'none') appendFileSync(RESULTS, report);
