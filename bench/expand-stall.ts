/**
 * How long 16 concurrent ValueSet/$expand of a 200,000-concept value set hold up the health check.
 * Starts Flint (embedded PGlite in a temporary folder), imports the code system with
 * CodeSystem/$import, then sends the 16 expansions at once while the health check is asked every
 * 50 ms, and prints the slowest health check answer and the expansions' statuses. Not a test: the
 * figure depends on the machine.
 *
 *   npx tsx bench/expand-stall.ts                   the server's EXPAND_MAX_CODES (default 10,000)
 *   EXPAND_MAX_CODES=1000000 npx tsx bench/expand-stall.ts   without the expansion cap
 *   STALL_QUERY='count=10000&offset=150000' npx tsx bench/expand-stall.ts   pages instead
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientCredentialsToken, fhirCall, launchFlint, stopFlint } from './flint-process.js';

const PORT = Number(process.env.BENCH_PORT ?? 18097);
const BASE = `http://127.0.0.1:${PORT}`;
const FHIR = `${BASE}/fhir/R4`;
const CLIENT = { id: 'expand-stall-admin', secret: 'expand-stall-secret-0123456789' };
const SYSTEM = 'http://flint.bench/CodeSystem/stall';
const VALUE_SET = 'http://flint.bench/ValueSet/stall';
const SIZE = 200_000;
const CHUNK = 20_000;
const CONCURRENT = 16;
const QUERY = process.env.STALL_QUERY ?? '';

async function seed(auth: string): Promise<void> {
  await fhirCall(FHIR, auth, 'POST', '/CodeSystem', { resourceType: 'CodeSystem', url: SYSTEM, status: 'active', content: 'not-present' });
  for (let from = 0; from < SIZE; from += CHUNK) {
    const parameter: unknown[] = [{ name: 'system', valueUri: SYSTEM }];
    for (let i = from; i < from + CHUNK; i++) parameter.push({ name: 'concept', valueCoding: { code: `C${i}`, display: `Concept number ${i}` } });
    await fhirCall(FHIR, auth, 'POST', '/CodeSystem/$import', { resourceType: 'Parameters', parameter });
  }
  await fhirCall(FHIR, auth, 'POST', '/ValueSet', { resourceType: 'ValueSet', url: VALUE_SET, status: 'active', compose: { include: [{ system: SYSTEM }] } });
}

/** Asks the health check every 50 ms until `done`; the slowest answer in ms. */
async function slowestHealthCheck(done: () => boolean): Promise<number> {
  let slowest = 0;
  while (!done()) {
    const started = performance.now();
    await fetch(`${BASE}/healthcheck`).then((res) => res.arrayBuffer());
    slowest = Math.max(slowest, performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return slowest;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'flint-expand-stall-'));
  const flint = await launchFlint(PORT, {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    MAX_BODY_BYTES: String(64 * 1024 * 1024),
    SUPER_ADMIN_CLIENT_ID: CLIENT.id,
    SUPER_ADMIN_CLIENT_SECRET: CLIENT.secret,
    ...(process.env.EXPAND_MAX_CODES ? { EXPAND_MAX_CODES: process.env.EXPAND_MAX_CODES } : {}),
  });
  try {
    const auth = await clientCredentialsToken(BASE, CLIENT);
    await seed(auth);
    const path = `/ValueSet/$expand?url=${encodeURIComponent(VALUE_SET)}${QUERY ? `&${QUERY}` : ''}`;
    // One expansion first: the code system is then in memory, as on a server that has been running.
    await fetch(`${FHIR}${path}`, { headers: { authorization: `Bearer ${auth}` } }).then((res) => res.arrayBuffer());
    let finished = false;
    const started = performance.now();
    const probe = slowestHealthCheck(() => finished);
    const statuses = await Promise.all(
      Array.from({ length: CONCURRENT }, () =>
        fetch(`${FHIR}${path}`, { headers: { authorization: `Bearer ${auth}` } }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    finished = true;
    const slowest = await probe;
    console.log(
      `${CONCURRENT} × GET ${path.slice(0, 60)}… (EXPAND_MAX_CODES=${process.env.EXPAND_MAX_CODES ?? 'default'}): ` +
        `statuses ${[...new Set(statuses)].join(', ')}, all answered in ${seconds.toFixed(2)} s, slowest health check ${Math.round(slowest)} ms`,
    );
  } finally {
    await stopFlint(flint);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
