/**
 * The statements a search sends, each timed and (EXPLAIN=1) explained as the server plans it: a
 * statement the service marks planOnce with a generic plan, the others planned for their values.
 * Runs the search service in this process on the search benchmark's database (bench/search.ts
 * fills it), one connection, no HTTP: for finding which statement of a shape is slow and why,
 * e.g. before and after ANALYZE.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_bench [ONLY=chained,date or ONLY="has: code, gender;chained"] [EXPLAIN=1] [PLAN_ONLY=1] [ALLCUSTOM=1] [TIMEOUT_MS=60000] \
 *     [EXTRA='label|Observation|date=ge2015-01-01[|every]'] [BENCH_TREE=/work/wt-base] npx tsx bench/search-plans.ts
 *
 * Each statement runs once untimed, then once timed (wall and the backend's CPU). Each search's line ends with its matches'
 * count, a digest of their ids in order, one of the same ids sorted (`set`: a page without _sort
 * has no order of its own, so two plans may list it differently) and its total, to compare answers
 * across trees. FULL_SQL=1 prints each statement whole. PLAN_ONLY=1 only explains each statement
 * (for a plan that would run for minutes: its later statements then see no rows); ALLCUSTOM=1
 * plans every statement for its values, as the embedded database and a server with
 * DATABASE_PREPARED_STATEMENTS=0 do. REPEAT=n then runs each search n more times and prints its
 * CPU per search (cpuPerSearch). BENCH_TREE runs the search service of another checkout (its
 * src/) on these shapes, so that shapes added here compare against an older tree. A query ending
 * in `#next` is the page its first page's next link points to (a `_cursor` page): the first page
 * runs untimed and unlogged, as the server plans it, then the next one as any other shape.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { SqlExecutor, QueryOptions } from '../src/db/database.js';
import { cpuSeconds } from './process-cpu.js';

// BENCH_TREE: another checkout whose search service runs these shapes (an A/B against its sources).
const tree = process.env.BENCH_TREE ?? new URL('..', import.meta.url).pathname;
const { loadConfig } = (await import(`${tree}/src/config.js`)) as typeof import('../src/config.js');
const { search, searchServicesFor } = (await import(`${tree}/src/search/service.js`)) as typeof import('../src/search/service.js');
const { planSettings } = (await import(`${tree}/src/db/database.js`)) as typeof import('../src/db/database.js');

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to the search benchmark database');
const PROJECT = 'search-bench';
/** Who searches: a member of the project (default), a super admin over every project, or a member whose AccessPolicy has criteria. */
type Who = 'member' | 'every' | 'policy';
/** A member whose AccessPolicy narrows both types by criteria (as bench/export.ts's policy form). */
const POLICY = {
  policyId: 'search-plans',
  resources: [
    { resourceType: 'Patient', readonly: true, criteria: 'Patient?gender=female' },
    { resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' },
  ],
};
const shapes: [string, string, string, Who?][] = [
  ['name prefix', 'Patient', 'name=smi'],
  ['identifier', 'Patient', 'identifier=http://hospital.example.org/mrn|MRN4242'],
  ['subject+code', 'Observation', 'subject=Patient/pat-4242&code=http://loinc.org|8867-4'],
  ['date range', 'Observation', 'date=ge2023-03-01&date=le2023-03-01'],
  ['date eq', 'Observation', 'date=2023-03-01'],
  ['date eq, all', 'Observation', 'date=2023-03-01&_count=1000'],
  ['chained', 'Observation', 'subject:Patient.identifier=MRN4242'],
  ['chained name', 'Observation', 'subject:Patient.name=smith42&_count=1000'],
  ['chained name, sort -date', 'Observation', 'subject:Patient.name=smith42&_sort=-date&_count=20'],
  ['chained name common', 'Observation', 'subject:Patient.name=smi'],
  ['chained name common, all', 'Observation', 'subject:Patient.name=smi&_count=1000'],
  ['chained name common, total', 'Observation', 'subject:Patient.name=smi&_total=accurate'],
  ['chained name common, sort -date', 'Observation', 'subject:Patient.name=smi&_sort=-date&_count=20'],
  ['chained gender', 'Observation', 'subject:Patient.gender=female'],
  ['chained gender, sort -date', 'Observation', 'subject:Patient.gender=female&_sort=-date&_count=20'],
  // Chains past the sorted candidates' bound (500,000 references to female Patients) whose other filter few rows of the
  // sort parameter meet: a value one Observation in 600 has (each a female Patient's), a code none of hers has.
  ['chained gender rare, sort -date', 'Observation', 'subject:Patient.gender=female&value-quantity=99.9&_sort=-date&_count=20'],
  ['chained gender rare, sort date', 'Observation', 'subject:Patient.gender=female&value-quantity=99.9&_sort=date&_count=20'],
  ['chained gender none, sort -date', 'Observation', 'subject:Patient.gender=female&code=http://loinc.org|8867-4&_sort=-date&_count=20'],
  ['chained gender, sort -lastUpdated', 'Observation', 'subject:Patient.gender=female&_sort=-_lastUpdated&_count=20'],
  ['sort -lastUpdated', 'Observation', '_sort=-_lastUpdated&_count=20'],
  // Chains to `:missing` and `:not` targets: none or few on the seed as generated (every Patient has a
  // gender and is active; bench/RESULTS.md says which were added for rare matches), half of them for `not=male`.
  ['chained missing', 'Observation', 'subject:Patient.gender:missing=true&_count=20'],
  ['chained missing, total', 'Observation', 'subject:Patient.gender:missing=true&_count=20&_total=accurate'],
  ['chained missing, sort -date', 'Observation', 'subject:Patient.gender:missing=true&_sort=-date&_count=20'],
  ['chained missing, sort -lastUpdated', 'Observation', 'subject:Patient.gender:missing=true&_sort=-_lastUpdated&_count=20'],
  ['chained not active', 'Observation', 'subject:Patient.active:not=true&_count=20'],
  ['chained not active, total', 'Observation', 'subject:Patient.active:not=true&_count=20&_total=accurate'],
  ['chained not active, sort -date', 'Observation', 'subject:Patient.active:not=true&_sort=-date&_count=20'],
  ['chained not male', 'Observation', 'subject:Patient.gender:not=male&_count=20'],
  ['chained not male, total', 'Observation', 'subject:Patient.gender:not=male&_count=20&_total=accurate'],
  ['chained not male, sort -date', 'Observation', 'subject:Patient.gender:not=male&_sort=-date&_count=20'],
  ['chained not male, sort -lastUpdated', 'Observation', 'subject:Patient.gender:not=male&_sort=-_lastUpdated&_count=20'],
  ['cursor first', 'Patient', '_sort=_lastUpdated&_count=1000'],
  // Pages by cursor (`_sort=_lastUpdated`, `_count` of at least 20) of chains to common targets.
  ['cursor: chained gender', 'Observation', 'subject:Patient.gender=female&_sort=_lastUpdated&_count=100'],
  ['cursor: chained gender, next', 'Observation', 'subject:Patient.gender=female&_sort=_lastUpdated&_count=100#next'],
  ['cursor: chained name common', 'Observation', 'subject:Patient.name=smi&_sort=_lastUpdated'],
  ['cursor: chained name common, next', 'Observation', 'subject:Patient.name=smi&_sort=_lastUpdated#next'],
  ['cursor: chained gender rare, next', 'Observation', 'subject:Patient.gender=female&value-quantity=99.9&_sort=_lastUpdated&_count=20#next'],
  ['include', 'Observation', 'code=http://loinc.org|8867-4&_include=Observation:subject'],
  ['sort -date', 'Observation', 'code=http://loinc.org|8867-4&_sort=-date'],
  ['total estimate', 'Observation', 'code=http://loinc.org|8867-4&_total=estimate'],
  ['filters: name prefix + gender', 'Patient', 'name=smi&gender=female'],
  ['filters: name prefix + birthdate', 'Patient', 'name=smi&birthdate=ge2010-01-01'],
  ['filters: date range + status', 'Observation', 'date=ge2023-03-01&date=le2023-03-01&status=final'],
  ['filters: date range + code', 'Observation', 'date=ge2023-03-01&date=le2023-03-01&code=http://loinc.org|8867-4'],
  ['filters: code + status', 'Observation', 'code=http://loinc.org|8867-4&status=final'],
  ['filters: code + date', 'Observation', 'code=http://loinc.org|8867-4&date=ge2024-12-01'],
  ['codes: status + code', 'Observation', 'status=final&code=http://loinc.org|8867-4'],
  ['codes: status + category + code', 'Observation', 'status=final&category=vital-signs&code=http://loinc.org|8867-4&_count=20'],
  ['codes: status + absent code', 'Observation', 'status=final&code=http://loinc.org|0000-0'],
  ['codes: status + code, offset', 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=200&_count=20'],
  ['deep: status + code, offset 1000', 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=1000&_count=20'],
  ['deep: status + code, offset 2000', 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=2000&_count=20'],
  ['deep: status + code, offset 10000', 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=10000&_count=100'],
  ['deep: sort -date, code, offset 3000', 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_offset=3000&_count=20'],
  ['deep: sort -date, status + code, offset 10000', 'Observation', 'status=final&code=http://loinc.org|8867-4&_sort=-date&_offset=10000&_count=100'],
  ['deep: status + category + code, offset 5000', 'Observation', 'status=final&category=vital-signs&code=http://loinc.org|8867-4&_offset=5000&_count=20'],
  ['total accurate', 'Observation', 'code=http://loinc.org|8867-4&_total=accurate'],
  ['total accurate, every Observation', 'Observation', 'status=final&_total=accurate'],
  ['total accurate, date eq', 'Observation', 'date=2023-03-01&_total=accurate'],
  // Two codes every Observation has: alike in size, both read once and grouped by resource (exact-count.ts).
  ['total accurate, status + category', 'Observation', 'status=final&category=vital-signs&_total=accurate'],
  // A code of 50,000 rows with codes every Observation has: the code drives, the others probed per row.
  ['total accurate, status + code', 'Observation', 'status=final&code=http://loinc.org|8867-4&_total=accurate'],
  ['total accurate, status + category + code', 'Observation', 'status=final&category=vital-signs&code=http://loinc.org|8867-4&_total=accurate'],
  ['every: identifier', 'Patient', 'identifier=http://hospital.example.org/mrn|MRN4242', 'every'],
  ['every: sort', 'Observation', '_sort=-_lastUpdated&_count=20', 'every'],
  ['every: chained', 'Observation', 'subject:Patient.identifier=MRN4242', 'every'],
  ['every: chained name', 'Observation', 'subject:Patient.name=smith42', 'every'],
  ['every: chained name, all', 'Observation', 'subject:Patient.name=smith42&_count=1000', 'every'],
  ['every: chained, all', 'Observation', 'subject:Patient.identifier=MRN4242&_count=1000', 'every'],
  ['every: chained name, sort -date', 'Observation', 'subject:Patient.name=smith42&_sort=-date&_count=20', 'every'],
  ['every: chained name, status', 'Observation', 'subject:Patient.name=smith42&status=final&_count=1000', 'every'],
  ['every: chained name common', 'Observation', 'subject:Patient.name=smi', 'every'],
  ['every: chained gender', 'Observation', 'subject:Patient.gender=female', 'every'],
  ['every: chained name common, sort -date', 'Observation', 'subject:Patient.name=smi&_sort=-date&_count=20', 'every'],
  ['every: chained gender rare, sort -date', 'Observation', 'subject:Patient.gender=female&value-quantity=99.9&_sort=-date&_count=20', 'every'],
  // A super admin's pages by `_lastUpdated` of a chain to common targets without a rarer filter: each project walked from the cursor.
  ['every: cursor: chained gender', 'Observation', 'subject:Patient.gender=female&_sort=_lastUpdated&_count=100', 'every'],
  ['every: cursor: chained gender, next', 'Observation', 'subject:Patient.gender=female&_sort=_lastUpdated&_count=100#next', 'every'],
  ['every: cursor: chained name common', 'Observation', 'subject:Patient.name=smi&_sort=_lastUpdated', 'every'],
  ['every: cursor: chained name common, next', 'Observation', 'subject:Patient.name=smi&_sort=_lastUpdated#next', 'every'],
  ['every: chained gender, sort -lastUpdated', 'Observation', 'subject:Patient.gender=female&_sort=-_lastUpdated&_count=20', 'every'],
  ['every: chained gender, sort -lastUpdated, count 100', 'Observation', 'subject:Patient.gender=female&_sort=-_lastUpdated&_count=100', 'every'],
  ['every: has', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=smith42', 'every'],
  // Reverse chains on the seed data: every Patient's Observations share one code, 8867-4 being that of 5,000
  // Patients (every Johnson's, Adams's and Perez's: johnson42 names ~20 who have it, smith42 none).
  ['every: has, name', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=johnson42', 'every'],
  ['every: has, code', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4', 'every'],
  ['every: has, sort family', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&_sort=family&_count=20', 'every'],
  ['every: name prefix', 'Patient', 'name=smi', 'every'],
  ['every: sort -date', 'Observation', 'code=http://loinc.org|8867-4&_sort=-date', 'every'],
  ['every: sort date, offset', 'Observation', 'code=http://loinc.org|8867-4&_sort=date&_offset=40&_count=20', 'every'],
  ['every: sort -date, status', 'Observation', 'status=final&_sort=-date&_count=20', 'every'],
  ['every: sort -date, offset 1000', 'Observation', 'code=http://loinc.org|8310-5&_sort=-date&_offset=1000&_count=20', 'every'],
  ['every: sort -date, offset 1700', 'Observation', 'code=http://loinc.org|8310-5&_sort=-date&_offset=1700&_count=20', 'every'],
  ['every: sort -date, count 1000', 'Observation', 'code=http://loinc.org|8310-5&_sort=-date&_count=1000', 'every'],
  ['every: total accurate', 'Observation', 'code=http://loinc.org|8867-4&_total=accurate', 'every'],
  ['every: sort date, status, offset', 'Observation', 'status=final&_sort=date&_offset=40&_count=20', 'every'],
  ['every: sort -date alone', 'Observation', '_sort=-date&_count=20', 'every'],
  ['every: sort -date, status, code', 'Observation', 'status=final&code=http://loinc.org|8867-4&_sort=-date&_count=20', 'every'],
  ['every: sort family, gender', 'Patient', 'gender=female&_sort=family&_count=20', 'every'],
  ['every: sort -family', 'Patient', '_sort=-family&_count=20', 'every'],
  ['policy: sort', 'Observation', '_sort=-_lastUpdated&_count=20', 'policy'],
  ['policy: code', 'Observation', 'code=http://loinc.org|8867-4', 'policy'],
  ['policy: date range', 'Observation', 'date=ge2023-03-01&date=le2023-03-01', 'policy'],
  ['policy: sort -date', 'Observation', 'code=http://loinc.org|8867-4&_sort=-date', 'policy'],
  ['policy: name prefix', 'Patient', 'name=smi', 'policy'],
  ['policy: unsorted', 'Observation', '_count=20', 'policy'],
  ['policy: total accurate', 'Observation', 'code=http://loinc.org|8867-4&_total=accurate', 'policy'],
  // Chains and `_has` test the policy's criteria on the resources they look into (docs/auth.md): against the member shapes above.
  ['policy: chained', 'Observation', 'subject:Patient.identifier=MRN4242', 'policy'],
  ['policy: chained name', 'Observation', 'subject:Patient.name=smith42', 'policy'],
  ['policy: chained name common', 'Observation', 'subject:Patient.name=smi', 'policy'],
  ['policy: has, name none', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=smith42', 'policy'],
  ['member: chained name', 'Observation', 'subject:Patient.name=smith42'],
  ['union: name exact', 'Patient', 'name:exact=Smith42'],
  ['union: name prefix + sort', 'Patient', 'name=smi&_sort=name'],
  ['union: sort name', 'Patient', '_sort=name&_count=20'],
  ['union: sort -name', 'Patient', '_sort=-name&_count=20'],
  ['union: name prefix, offset', 'Patient', 'name=smi&_offset=200&_count=20'],
  ['union: combo-code', 'Observation', 'combo-code=http://loinc.org|8867-4'],
  ['union: combo-code + status', 'Observation', 'combo-code=http://loinc.org|8867-4&status=final'],
  ['union: combo-code + sort -date', 'Observation', 'combo-code=http://loinc.org|8867-4&_sort=-date'],
  ['union: combo-value-quantity', 'Observation', 'combo-value-quantity=gt99'],
  ['union: combo-code total accurate', 'Observation', 'combo-code=http://loinc.org|8867-4&_total=accurate'],
  ['union: every: name prefix + sort', 'Patient', 'name=smi&_sort=name', 'every'],
  ['key sorted: subject -date', 'Observation', 'subject=Patient/pat-4242&_sort=-date'],
  ['key sorted: subject date', 'Observation', 'subject=Patient/pat-4242&_sort=date'],
  ['key sorted: subject -lastUpdated', 'Observation', 'subject=Patient/pat-4242&_sort=-_lastUpdated'],
  ['key sorted: subject + code -date', 'Observation', 'subject=Patient/pat-4242&code=http://loinc.org|789-8&_sort=-date'],
  ['key sorted: subject -date total', 'Observation', 'subject=Patient/pat-4242&_sort=-date&_total=accurate'],
  ['key sorted: patient -date', 'Observation', 'patient=Patient/pat-4242&_sort=-date'],
  ['has: code', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4'],
  ['has: code, name', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=johnson42'],
  ['has: code, name none', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=smith42'],
  ['has: code, name prefix', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=joh'],
  ['has: patient status', 'Patient', '_has:Observation:patient:status=final'],
  ['has: patient status, sort family', 'Patient', '_has:Observation:patient:status=final&_sort=family&_count=20'],
  ['has: code, sort family', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&_sort=family&_count=20'],
  ['has: code, sort -family', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&_sort=-family&_count=20'],
  ['has: code, count 1000', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&_count=1000'],
  ['has: code, total accurate', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&_total=accurate'],
  ['has: code, gender', 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&gender=female'],
  ['has: one day', 'Patient', '_has:Observation:subject:date=2023-03-01'],
  ['has: one day, code', 'Patient', '_has:Observation:subject:date=2023-03-01&_has:Observation:subject:code=http://loinc.org|8867-4'],
  // As the search benchmark asks it: a super admin naming the project.
  ['key sorted: admin subject -date', 'Observation', 'subject=Patient/pat-4242&_sort=-date&_project=search-bench', 'every'],
];
if (process.env.EXTRA) { const [l, t, q, w] = process.env.EXTRA.split('|'); shapes.unshift([l, t, q, w as Who | undefined]); }
// Names are split on `;` when there is one, so that a name with commas can be picked alone.
/** The end of a query whose next page (by its first page's next link) is the shape. */
const NEXT = '#next';
const only = process.env.ONLY?.split(process.env.ONLY.includes(';') ? ';' : ',');
const repeat = Number(process.env.REPEAT ?? 0);
const explain = process.env.EXPLAIN === '1';
const client = new pg.Client({ connectionString: DATABASE_URL });
await client.connect();
// A shape whose plan would run for minutes is stopped and reported (TIMEOUT_MS, default 60 s).
await client.query(`SET statement_timeout = ${Number(process.env.TIMEOUT_MS ?? 60_000)}`);
// JIT as the tree's pools have it (src/db/database.ts planSettings: off since it cost tens of ms per statement).
await client.query(`SET jit = ${planSettings('force_custom_plan').includes('-c jit=off') ? 'off' : 'on'}`);
let n = 0;
// The backend's CPU per statement (from /proc, in 10 ms ticks): the machine's load does not count.
const [{ pid: backendPid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
/** A value as an SQL literal, for EXPLAIN EXECUTE (which takes no bind parameters). */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) return `ARRAY[${v.map(literal).join(',')}]`;
  if (v instanceof Date) return `'${v.toISOString()}'`;
  return `'${String(v).replace(/'/g, "''")}'`;
}
async function run(sql: string, args: readonly unknown[], options?: QueryOptions): Promise<{ rows: unknown[]; ms: number; cpuMs: number; plan?: string }> {
  await client.query(`SET plan_cache_mode = ${options?.planOnce && !process.env.ALLCUSTOM ? 'force_generic_plan' : 'force_custom_plan'}`);
  // The plan-once pool's connections price sequential and bitmap scans out (src/db/database.ts, planSettings).
  const generic = options?.planOnce && !process.env.ALLCUSTOM ? 'off' : 'on';
  await client.query(`SET enable_seqscan = ${generic}; SET enable_bitmapscan = ${generic}`);
  const name = `d${++n}`;
  // The estimate's own EXPLAIN reads no rows: it runs as it is (it cannot be prepared).
  if (process.env.PLAN_ONLY && !/^\s*EXPLAIN/i.test(sql)) {
    // The plan alone, without running the statement (a plan that would run for minutes).
    await client.query(`PREPARE ${name} AS ${sql}`);
    const e = await client.query(`EXPLAIN (COSTS OFF) EXECUTE ${name}(${args.map(literal).join(',')})`).catch((err) => ({ rows: [{ 'QUERY PLAN': String(err) }] }));
    return { rows: [], ms: 0, cpuMs: 0, plan: e.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n') };
  }
  await client.query({ text: sql, values: args as unknown[], name });
  const started = performance.now();
  const cpuBefore = cpuSeconds(backendPid);
  const res = await client.query({ text: sql, values: args as unknown[], name });
  const ms = performance.now() - started;
  const cpuMs = (cpuSeconds(backendPid) - cpuBefore) * 1000;
  let plan: string | undefined;
  if (explain) {
    const e = await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE ${name}(${args.map(literal).join(',')})`).catch((err) => ({ rows: [{ 'QUERY PLAN': String(err) }] }));
    plan = e.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
  }
  return { rows: res.rows, ms, cpuMs, plan };
}
for (const [label, type, query, who = 'member'] of shapes) {
  const every = who === 'every';
  if (only && !only.some((o) => label.startsWith(o))) continue;
  const log: string[] = [];
  const executor: SqlExecutor = {
    query: async <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
      const r = await run(sql, args, options);
      log.push(`  ${r.ms.toFixed(1)} ms (backend CPU ${r.cpuMs.toFixed(0)}) ${options?.planOnce ? 'G' : 'C'} ${(process.env.FULL_SQL ? sql : sql.slice(0, 160)).replace(/\s+/g, ' ')}${r.plan ? '\n' + r.plan : ''}`);
      return r.rows as R[];
    },
    execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, args as unknown[])).rowCount ?? 0,
  };
  const identity = { projectId: PROJECT, superAdmin: every, accessPolicy: who === 'policy' ? POLICY : undefined };
  const services = searchServicesFor({ database: executor, identity, config: { ...loadConfig({}), fhirBaseUrl: 'http://x/fhir/R4' } });
  const next = query.endsWith(NEXT);
  const asked = every ? query.replace(NEXT, '') : `${query.replace(NEXT, '')}&_project=${PROJECT}`;
  const params = next ? await nextPageParams(type, asked, identity).catch((error: unknown) => new Error(String(error))) : asked;
  if (params instanceof Error) {
    console.log(`${label}: (failed: its first page: ${params.message.slice(0, 120)})`);
    continue;
  }
  const started = performance.now();
  const failed = await search(services, type, [...new URLSearchParams(params).entries()]).then(
    // What it answered, to compare result sets across trees: the matches' count, a digest of their ids in order, the total.
    (result) => {
      const digest = (ids: string[]) => createHash('sha1').update(ids.join(',')).digest('hex').slice(0, 10);
      const ids = result.matches.map(({ id }) => id);
      return ` (${ids.length} matches ${digest(ids)} set ${digest([...ids].sort())}${result.total ? `, total ${result.total.value}` : ''})`;
    },
    (error: unknown) => ` (failed: ${String(error).slice(0, 120)})`,
  );
  console.log(`${label}: ${(performance.now() - started).toFixed(1)} ms total${failed}`);
  console.log(log.join('\n'));
  if (repeat > 0 && !failed.includes('failed:')) console.log(`${label}: ${await cpuPerSearch(type, params, identity)}`);
}

/**
 * `params` with the `_cursor` of its first page's next link: that page read once as the server
 * reads it (each statement planned for its values unless planOnce), neither timed nor logged.
 */
async function nextPageParams(type: string, params: string, identity: Parameters<typeof searchServicesFor>[0]['identity']): Promise<string> {
  const executor: SqlExecutor = {
    query: async <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
      const generic = options?.planOnce && !process.env.ALLCUSTOM;
      await client.query(`SET plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}; SET enable_seqscan = ${generic ? 'off' : 'on'}; SET enable_bitmapscan = ${generic ? 'off' : 'on'}`);
      return (await client.query({ text: sql, values: args as unknown[], name: `f${++n}` })).rows as R[];
    },
    execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, args as unknown[])).rowCount ?? 0,
  };
  const services = searchServicesFor({ database: executor, identity, config: { ...loadConfig({}), fhirBaseUrl: 'http://x/fhir/R4' } });
  const { paging } = await search(services, type, [...new URLSearchParams(params).entries()]);
  if (!paging.next || !('cursor' in paging.next)) throw new Error(`${type}?${params}: its first page has no next cursor`);
  return `${params}&_cursor=${paging.next.cursor}`;
}

/**
 * REPEAT=n: the search run n more times as the server runs it (each statement once, planned for
 * its values unless planOnce), and the CPU it took per search: this process's (the search
 * service) and the database backend's (from /proc, so the machine's load does not count).
 */
async function cpuPerSearch(type: string, params: string, identity: Parameters<typeof searchServicesFor>[0]['identity']): Promise<string> {
  const executor: SqlExecutor = {
    query: async <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) =>
      (await client.query(options?.planOnce ? { text: sql, values: args as unknown[], name: `r${createHash('sha1').update(sql).digest('hex')}` } : { text: sql, values: args as unknown[] })).rows as R[],
    execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, args as unknown[])).rowCount ?? 0,
  };
  await client.query('SET plan_cache_mode = auto; SET enable_seqscan = on; SET enable_bitmapscan = on');
  const services = searchServicesFor({ database: executor, identity, config: { ...loadConfig({}), fhirBaseUrl: 'http://x/fhir/R4' } });
  const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
  const backend = cpuSeconds(pid);
  const node = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < repeat; i++) await search(services, type, [...new URLSearchParams(params).entries()]);
  const used = process.cpuUsage(node);
  const per = (seconds: number) => ((seconds * 1000) / repeat).toFixed(1);
  return `${repeat} runs, per search: ${per((performance.now() - started) / 1000)} ms wall, backend CPU ${per(cpuSeconds(pid) - backend)} ms, search service CPU ${per((used.user + used.system) / 1e6)} ms`;
}
await client.end();
