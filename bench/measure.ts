/**
 * Measure/$evaluate-measure benchmark: on a PostgreSQL database holding the search
 * benchmark's 100,000 Patients and 1,000,000 Observations (bench/search.ts generates them; run this
 * on a copy: `CREATE DATABASE flint_measure_bench TEMPLATE flint_search_bench`), evaluates a
 * Measure with three populations (all Patients, Observations in the period, Observations of one
 * LOINC code in the period) BENCH_RUNS times, one at a time, and appends the timings to
 * bench/RESULTS.md.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_measure_bench npx tsx bench/measure.ts
 *
 * BENCH_RESULTS=<file> appends there instead of bench/RESULTS.md.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { clientCredentialsToken, fhirCall, launchFlint } from './flint-process.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const PORT = Number(process.env.BENCH_PORT ?? 18096);
const BASE = `http://127.0.0.1:${PORT}`;
const FHIR = `${BASE}/fhir/R4`;
const CLIENT_ID = 'search-bench-admin';
const CLIENT_SECRET = 'search-bench-secret-0123456789';
/** BENCH_RESULTS: a file to append to instead of bench/RESULTS.md (trial runs). */
const RESULTS = process.env.BENCH_RESULTS ?? new URL('./RESULTS.md', import.meta.url).pathname;

async function startFlint(): Promise<ChildProcess> {
  return launchFlint(PORT, { DATABASE_URL, LOG_LEVEL: 'warn', SUPER_ADMIN_CLIENT_ID: CLIENT_ID, SUPER_ADMIN_CLIENT_SECRET: CLIENT_SECRET });
}

function call(auth: string, method: string, path: string, body?: unknown): Promise<any> {
  return fhirCall(FHIR, auth, method, path, body);
}

async function main(): Promise<void> {
  if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to a copy of the search benchmark database');
  const flint = await startFlint();
  try {
    const auth = await clientCredentialsToken(BASE, { id: CLIENT_ID, secret: CLIENT_SECRET });
    const query = (expression: string) => ({ language: 'application/x-fhir-query', expression });
    const code = (c: string) => ({ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/measure-population', code: c }] });
    const measure = await call(auth, 'POST', '/Measure', {
      resourceType: 'Measure',
      status: 'active',
      url: 'http://flint.bench/Measure/observations',
      group: [
        {
          population: [
            { code: code('initial-population'), criteria: query('Patient') },
            { code: code('denominator'), criteria: query('Observation') },
            { code: code('numerator'), criteria: query('Observation?code=http://loinc.org|8867-4') },
          ],
        },
      ],
    });
    const period = { resourceType: 'Parameters', parameter: [{ name: 'periodStart', valueDate: '2015-01-01' }, { name: 'periodEnd', valueDate: '2030-12-31' }] };
    const times: number[] = [];
    let counts = '';
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      const report = await call(auth, 'POST', `/Measure/${measure.id}/$evaluate-measure`, period);
      times.push(performance.now() - started);
      counts = report.group[0].population.map((p: { count: number }) => p.count).join(' / ');
    }
    const sorted = [...times].sort((a, b) => a - b);
    const line = [
      '',
      `## Measure/$evaluate-measure, PostgreSQL, ${new Date().toISOString().slice(0, 16)}Z`,
      '',
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, load average ${loadavg()[0].toFixed(1)} (shared). Data: the search benchmark's 100,000 Patients and 1,000,000 Observations.`,
      `Three populations (Patient; Observation in the period; Observation?code=http://loinc.org|8867-4 in the period), counts ${counts}; ${RUNS} runs one after another, target < 1 s:`,
      `median ${Math.round(sorted[Math.floor(RUNS / 2)])} ms, fastest ${Math.round(sorted[0])} ms, slowest ${Math.round(sorted[RUNS - 1])} ms.`,
    ].join('\n');
    console.log(line);
    appendFileSync(RESULTS, `${line}\n`);
  } finally {
    flint.kill('SIGTERM');
    await new Promise((r) => flint.once('exit', r));
  }
}

await main();
