/**
 * Bulk export benchmark: the export job's file writing (src/bulk/export-files.ts) run in this
 * process on the search benchmark's database (bench/search.ts fills it: 100,000 Patients and
 * 1,000,000 Observations in one project; bench/search-data.ts's generate() fills a smaller one),
 * without HTTP: keyset pages of the resource table, each version's stored JSON written into NDJSON
 * files of the database's binary storage. Four forms, built by the same functions the export
 * operation builds its run with (src/bulk/export-operation.ts):
 *
 *   plain       stored JSON text copied unparsed
 *   elements    `_elements=Patient.name,Observation.code,Observation.subject`: every line parsed and subsetted
 *   typeFilter  `_typeFilter=Patient?gender=female,Observation?code=http://loinc.org|8867-4`: a search per page
 *   policy      a member whose AccessPolicy has criteria (Patient?gender=female, Observation?status=final):
 *               every page of every type through the search service
 *
 * run in turn, ROUNDS times (plain, elements, typeFilter, policy, then again), so that the load of
 * a shared machine falls on all alike. Each run is a process of its own (this script again, with
 * EXPORT_BENCH_FORM set), so that its peak RSS (sampled every 50 ms) is its own; it prints the
 * resources read and written per second, then deletes its files.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_bench [ROUNDS=2] [FORMS=plain,policy] npx tsx bench/export.ts
 *
 * BENCH_TYPES (default Patient,Observation) and BENCH_PROJECT (default search-bench) choose what is
 * exported; the database is migrated first (the export needs the binary chunk table).
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseExportElements } from '../src/bulk/export-elements.js';
import { writeExportFiles, exportFileKey, type ExportRun } from '../src/bulk/export-files.js';
import { parseTypeFilters, typeFilterMatcher } from '../src/bulk/type-filter.js';
import { loadConfig } from '../src/config.js';
import { Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import type { Identity } from '../src/identity/identity.js';
import { DatabaseBinaryStorage } from '../src/storage/binary-storage.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to the search benchmark database');
const PROJECT = process.env.BENCH_PROJECT ?? 'search-bench';
const TYPES = (process.env.BENCH_TYPES ?? 'Patient,Observation').split(',');
const ROUNDS = Number(process.env.ROUNDS ?? 2);

/** One form of export: who exports, and its `_elements` and `_typeFilter` values. */
interface Form {
  name: string;
  identity: Identity;
  elements?: string[];
  typeFilter?: string[];
}

const owner: Identity = { projectId: PROJECT, superAdmin: false, projectAdmin: true };
const member: Identity = {
  projectId: PROJECT,
  superAdmin: false,
  accessPolicy: {
    policyId: 'export-bench',
    resources: [
      { resourceType: 'Patient', readonly: true, criteria: 'Patient?gender=female' },
      { resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' },
    ],
  },
};
const FORMS: Form[] = [
  { name: 'plain', identity: owner },
  { name: 'elements', identity: owner, elements: ['Patient.name,Observation.code,Observation.subject'] },
  { name: 'typeFilter', identity: owner, typeFilter: ['Patient?gender=female,Observation?code=http://loinc.org|8867-4'] },
  { name: 'policy', identity: member },
].filter((form) => !process.env.FORMS || process.env.FORMS.split(',').includes(form.name));
const ONE_FORM = process.env.EXPORT_BENCH_FORM;

const config = loadConfig({ DATABASE_URL });
const db = await Database.open(config);
const storage = new DatabaseBinaryStorage(db);

/** Rows of the exported types, written or not: what every form reads. */
async function rowsRead(): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource WHERE "projectId" = $1 AND "resourceType" = ANY($2) AND NOT deleted`, [PROJECT, TYPES]);
  return row.n;
}

/** One export of the form, as the job runs it; answers its line for the table. */
async function exportOnce(form: Form, read: number): Promise<string> {
  const jobId = `export-bench-${form.name}-${Date.now()}`;
  const run: ExportRun = {
    db,
    storage,
    projectId: PROJECT,
    jobId,
    maxPerFile: config.exportFileMaxResources,
    onFile: async () => undefined,
    matching: typeFilterMatcher({ database: db, identity: form.identity, config }, parseTypeFilters(form.typeFilter), db),
    transform: parseExportElements(form.elements),
  };
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  const load = loadavg()[0];
  const started = performance.now();
  const done = await writeExportFiles(run, { transactionTime: new Date().toISOString(), types: TYPES, typeIndex: 0, files: [] });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const written = done.files.reduce((sum, file) => sum + file.count, 0);
  for (const file of done.files) await storage.delete(exportFileKey(jobId, file.file));
  const mb = Math.round(peakRss / 2 ** 20);
  return `| ${form.name} | ${read} | ${written} | ${seconds.toFixed(1)} | ${Math.round(read / seconds)} | ${Math.round(written / seconds)} | ${mb} MB | ${load.toFixed(1)} |`;
}

/** Runs the form in a process of its own (this script again); answers its line. */
function exportInChild(form: Form): string {
  const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]], {
    env: { ...process.env, EXPORT_BENCH_FORM: form.name },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.status !== 0) throw new Error(`The ${form.name} export failed (exit ${child.status})`);
  return child.stdout.trim();
}

if (ONE_FORM) {
  console.log(await exportOnce(FORMS.find((form) => form.name === ONE_FORM)!, await rowsRead()));
} else {
  await migrate(db);
  console.log('| form | read | written | seconds | read/s | written/s | peak RSS | load (1 min) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (let round = 0; round < ROUNDS; round++) {
    for (const form of FORMS) console.log(exportInChild(form));
  }
}
await db.close();
