/**
 * Bulk export benchmark: the export job's file writing (src/bulk/export-files.ts) run in this
 * process on the search benchmark's database (bench/search.ts fills it: 100,000 Patients and
 * 1,000,000 Observations in one project), without HTTP: keyset pages of the resource table, each
 * version's stored JSON copied into NDJSON files of the database's binary storage. Prints
 * resources per second and the process's peak RSS (sampled every 50 ms), then deletes the files.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_bench npx tsx bench/export.ts
 *
 * BENCH_TYPES (default Patient,Observation) and BENCH_PROJECT (default search-bench) choose what is
 * exported; the database is migrated first (the export needs the binary chunk table).
 */
import { writeExportFiles, exportFileKey } from '../src/bulk/export-files.js';
import { loadConfig } from '../src/config.js';
import { Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { DatabaseBinaryStorage } from '../src/storage/binary-storage.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to the search benchmark database');
const PROJECT = process.env.BENCH_PROJECT ?? 'search-bench';
const TYPES = (process.env.BENCH_TYPES ?? 'Patient,Observation').split(',');

const db = await Database.open(loadConfig({ DATABASE_URL }));
await migrate(db);
const storage = new DatabaseBinaryStorage(db);
const jobId = `export-bench-${Date.now()}`;
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const started = performance.now();
const done = await writeExportFiles(
  { db, storage, projectId: PROJECT, jobId, maxPerFile: 100_000, onFile: async () => undefined },
  { transactionTime: new Date().toISOString(), types: TYPES, typeIndex: 0, files: [] },
);
const seconds = (performance.now() - started) / 1000;
clearInterval(sampler);
const resources = done.files.reduce((sum, file) => sum + file.count, 0);
console.log(`${resources} resources in ${done.files.length} files, ${seconds.toFixed(1)} s: ${Math.round(resources / seconds)} resources/s`);
console.log(`peak RSS ${Math.round(peakRss / 1024 / 1024)} MB`);
for (const file of done.files) await storage.delete(exportFileKey(jobId, file.file));
await db.close();
