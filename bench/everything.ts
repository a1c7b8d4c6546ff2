/**
 * Patient/$everything benchmark: on an empty PostgreSQL database (created for it; autovacuum off,
 * so the planner has no statistics of the data it just loaded, as on a fresh deployment), loads
 * one patient with 1,000 resources of mixed types (they reference 15 of 20 Practitioners,
 * Organizations and Medications) beside 50 other patients of 50 resources each, then walks the
 * patient's record in pages of 100, BENCH_RUNS times, and appends the per-page latency (median,
 * p95) to bench/RESULTS.md. It also prints PostgreSQL's plans (EXPLAIN, no ANALYZE) of a page of
 * each part and of the type level's next-patient step, and fails when the compartment page or
 * that step does not use its partial index.
 *
 *   psql -h 127.0.0.1 -U postgres -c 'create database flint_everything_bench'
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_everything_bench npx tsx bench/everything.ts
 *
 * BENCH_RESULTS=<file> appends there instead of bench/RESULTS.md.
 */
import { appendFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import pg from 'pg';
import { SqlArgs } from '../src/db/sql-args.js';
import { nextPatient, readMatches, readPatientItself, type RecordSource } from '../src/clinical/record-pages.js';
import { readReferenced } from '../src/clinical/record-referenced.js';
import { clientCredentialsToken, fhirCall, launchFlint, newProjectClient, stopFlint } from './flint-process.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const PAGE = 100;
const PORT = Number(process.env.BENCH_PORT ?? 18097);
const BASE = `http://127.0.0.1:${PORT}`;
const FHIR = `${BASE}/fhir/R4`;
const ADMIN = { id: 'everything-bench-admin', secret: 'everything-bench-secret-0123456789' };
const RESULTS = process.env.BENCH_RESULTS ?? new URL('./RESULTS.md', import.meta.url).pathname;

type Json = Record<string, unknown>;
const ref = (reference: string) => ({ reference });

/** `count` resources of the patient's record, of mixed types, pointing at the shared ones. */
function recordOf(patient: string, count: number, shared: { practitioners: string[]; organizations: string[]; medications: string[] }): Json[] {
  const subject = ref(`Patient/${patient}`);
  const pick = (list: string[], i: number) => ref(list[i % list.length]);
  const day = (i: number) => `20${10 + (i % 15)}-0${1 + (i % 9)}-1${i % 10}`;
  const makers: ((i: number) => Json)[] = [
    (i) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] }, subject, effectiveDateTime: day(i), performer: [pick(shared.practitioners, i)], valueQuantity: { value: 60 + (i % 40), unit: '/min' } }),
    (i) => ({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '29463-7' }] }, subject, effectiveDateTime: day(i) }),
    (i) => ({ resourceType: 'Condition', subject, recordedDate: day(i), asserter: pick(shared.practitioners, i) }),
    (i) => ({ resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject, period: { start: day(i) }, serviceProvider: pick(shared.organizations, i) }),
    (i) => ({ resourceType: 'MedicationRequest', status: 'active', intent: 'order', subject, authoredOn: day(i), medicationReference: pick(shared.medications, i), requester: pick(shared.practitioners, i) }),
    (i) => ({ resourceType: 'Procedure', status: 'completed', subject, performedDateTime: day(i) }),
    (i) => ({
      resourceType: 'AllergyIntolerance',
      clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
      patient: subject,
      recordedDate: day(i),
    }),
    (i) => ({ resourceType: 'Immunization', status: 'completed', vaccineCode: { text: 'flu' }, patient: subject, occurrenceDateTime: day(i) }),
  ];
  return Array.from({ length: count }, (_, i) => makers[i % makers.length](i));
}

/** Creates the resources by batch Bundles; answers their `Type/id`. */
async function createAll(token: string, resources: Json[]): Promise<string[]> {
  const made: string[] = [];
  for (let at = 0; at < resources.length; at += 250) {
    const entry = resources.slice(at, at + 250).map((resource) => ({ resource, request: { method: 'POST', url: String(resource.resourceType) } }));
    const bundle = await fhirCall(FHIR, token, 'POST', '', { resourceType: 'Bundle', type: 'batch', entry });
    for (const e of bundle.entry as { response: { status: string; location?: string } }[]) {
      if (!e.response.status.startsWith('201')) throw new Error(`batch entry failed: ${JSON.stringify(e)}`);
      // `Type/id/_history/v`, relative or absolute.
      made.push(e.response.location!.split('/_history')[0].split('/').slice(-2).join('/'));
    }
  }
  return made;
}

async function load(token: string): Promise<{ patient: string; projectId: string }> {
  const shared = {
    practitioners: await createAll(token, Array.from({ length: 10 }, (_, i) => ({ resourceType: 'Practitioner', name: [{ family: `P${i}` }] }))),
    organizations: await createAll(token, Array.from({ length: 5 }, (_, i) => ({ resourceType: 'Organization', name: `O${i}` }))),
    medications: await createAll(token, Array.from({ length: 5 }, (_, i) => ({ resourceType: 'Medication', code: { text: `M${i}` } }))),
  };
  const patients = (await createAll(token, Array.from({ length: 51 }, (_, i) => ({ resourceType: 'Patient', name: [{ family: `F${i}` }] })))).map((key) => key.split('/')[1]);
  for (const other of patients.slice(1)) await createAll(token, recordOf(other, 50, shared));
  await createAll(token, recordOf(patients[0], 1000, shared));
  const patient = await fhirCall(FHIR, token, 'GET', `/Patient/${patients[0]}`);
  return { patient: patients[0], projectId: patient.meta.project };
}

/** Walks the record once; answers each page's time and the number of entries. */
async function walk(token: string, patient: string): Promise<{ times: number[]; entries: number }> {
  const times: number[] = [];
  let entries = 0;
  let next: string | undefined = `${FHIR}/Patient/${patient}/$everything?_count=${PAGE}`;
  while (next) {
    const started = performance.now();
    const res: Response = await fetch(next, { headers: { authorization: `Bearer ${token}` } });
    const bundle = (await res.json()) as { entry?: unknown[]; link?: { relation: string; url: string }[] };
    times.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`$everything: ${res.status} ${JSON.stringify(bundle).slice(0, 300)}`);
    entries += bundle.entry?.length ?? 0;
    next = bundle.link?.find((l) => l.relation === 'next')?.url;
  }
  return { times, entries };
}

/** PostgreSQL's plans (no ANALYZE) of the patient itself and of a mid-record page of each part, as the operation builds them. */
async function plans(projectId: string, patient: string): Promise<string[]> {
  const captured: { sql: string; args: readonly unknown[] }[] = [];
  const source: RecordSource = {
    db: { query: async (sql: string, args: readonly unknown[] = []) => (captured.push({ sql, args }), []), execute: async () => 0 },
    identity: { projectId, superAdmin: false },
    projectId,
    filters: {},
    compileContext: (args: SqlArgs) => ({ args, scope: { projectIds: [projectId] }, fhirBase: FHIR, depth: 0 }),
  };
  await readPatientItself(source, patient);
  await readMatches(source, patient, { resourceType: 'Encounter', id: '8' }, PAGE + 1);
  await readReferenced(source, patient, { resourceType: 'Medication', id: '8' }, PAGE + 1);
  await nextPatient(source, patient);
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const out: string[] = [];
    for (const { sql, args } of captured) {
      const rows = (await client.query(`EXPLAIN ${sql}`, args as unknown[])).rows as { 'QUERY PLAN': string }[];
      out.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
    }
    return out;
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to an empty PostgreSQL database');
  const flint = await launchFlint(PORT, { DATABASE_URL, LOG_LEVEL: 'warn', SUPER_ADMIN_CLIENT_ID: ADMIN.id, SUPER_ADMIN_CLIENT_SECRET: ADMIN.secret });
  try {
    const admin = await clientCredentialsToken(BASE, ADMIN);
    const token = await clientCredentialsToken(BASE, await newProjectClient(BASE, admin, 'everything bench'));
    const { patient, projectId } = await load(token);
    const [selfPlan, matchPlan, includePlan, patientPlan] = await plans(projectId, patient);
    console.log(`Plan of the patient itself (first page):\n${selfPlan}\n`);
    console.log(`Plan of a compartment page:\n${matchPlan}\n\nPlan of a referenced-resources page:\n${includePlan}\n`);
    console.log(`Plan of the next patient (type level):\n${patientPlan}\n`);
    if (!matchPlan.includes('reference_index_patient_compartment_idx')) throw new Error('the compartment page does not use its partial index');
    if (!/Index Scan using (resource_pkey|resource_patient_by_project_idx)/.test(selfPlan)) throw new Error('the patient itself is not read by an index on its id');
    if (!patientPlan.includes('resource_patient_by_project_idx')) throw new Error('the next patient is not read by its partial index');
    await walk(token, patient); // warm-up: connections, caches, prepared plans
    const times: number[] = [];
    let entries = 0;
    for (let run = 0; run < RUNS; run++) {
      const walked = await walk(token, patient);
      times.push(...walked.times);
      entries = walked.entries;
    }
    const sorted = [...times].sort((a, b) => a - b);
    const at = (share: number) => sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))].toFixed(1);
    const line = [
      '',
      `## Patient/$everything, PostgreSQL, ${new Date().toISOString().slice(0, 16)}Z`,
      '',
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, load average ${loadavg()[0].toFixed(1)} (shared). Data: one patient with 1,000 resources of 8 types referencing 15 others, beside 50 patients of 50 resources; no ANALYZE since the load.`,
      `${RUNS} walks of the record (${entries} entries) in pages of ${PAGE}, one request at a time, target p95 < 100 ms per page:`,
      `median ${at(0.5)} ms, p95 ${at(0.95)} ms, slowest ${sorted[sorted.length - 1].toFixed(1)} ms per page (${sorted.length} pages).`,
    ].join('\n');
    console.log(line);
    appendFileSync(RESULTS, `${line}\n`);
  } finally {
    await stopFlint(flint);
  }
}

await main();
