/**
 * Patient/$everything's statements on the search benchmark's database (bench/search-seed.ts), each
 * timed and (EXPLAIN=1) explained, as bench/search-plans.ts does for searches: a walk of one
 * patient's record in pages of 100 (compartment pages, then referenced-resources pages) by a
 * member and by a member whose AccessPolicy has criteria, in this process, one connection, no
 * HTTP. The seed writes no `_compartment` rows; bench/everything-compartments.sql adds them (and
 * gives pat-1 about 20,000 Observations); bench/everything-followed.sql adds Practitioners for the
 * referenced part to list. Each walk prints its rows, a digest of their keys in order (the same
 * answer on two trees gives the same digest) and each statement's time; PARTS=referenced skips
 * the compartment pages; RECOUNT=1 counts before each referenced page instead of reading later
 * pages from the side the first was read from (as the walk's cursor carries it); PLAN=record or
 * PLAN=followed reads every referenced page from that side, uncounted.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_big [PATIENT=pat-1] [PAGES=5] [PARTS=referenced] [RECOUNT=1] [PLAN=followed] [EXPLAIN=1] npx tsx bench/everything-plans.ts
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { SqlExecutor } from '../src/db/database.js';
import { readMatches, type After, type RecordSource } from '../src/clinical/record-pages.js';
import { readReferenced } from '../src/clinical/record-referenced.js';
import type { ReferencedPlan } from '../src/clinical/everything-cursor.js';
import type { Identity } from '../src/identity/identity.js';

const DATABASE_URL = process.env.BENCH_DATABASE_URL;
if (!DATABASE_URL) throw new Error('Set BENCH_DATABASE_URL to the search benchmark database');
const PROJECT = 'search-bench';
const PATIENT = process.env.PATIENT ?? 'pat-1';
const PAGES = Number(process.env.PAGES ?? 5);
const PAGE = 100;
const explain = process.env.EXPLAIN === '1';
const parts = (process.env.PARTS ?? 'compartment,referenced').split(',');
const recount = process.env.RECOUNT === '1';
/** PLAN=record or PLAN=followed: every referenced page read from that side, uncounted. */
const forced = process.env.PLAN === 'record' || process.env.PLAN === 'followed' ? process.env.PLAN : undefined;
const who: [string, Identity][] = [
  ['member', { projectId: PROJECT, superAdmin: false }],
  [
    'policy (Observation?status=final)',
    { projectId: PROJECT, superAdmin: false, accessPolicy: { policyId: 'p', resources: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' }, { resourceType: 'Patient', readonly: true }] } },
  ],
];
const client = new pg.Client({ connectionString: DATABASE_URL });
await client.connect();
await client.query('SET plan_cache_mode = force_custom_plan');
let n = 0;
const literal = (v: unknown): string => (v === null || v === undefined ? 'NULL' : Array.isArray(v) ? `ARRAY[${v.map(literal).join(',')}]` : `'${String(v).replace(/'/g, "''")}'`);
const times: string[] = [];
const executor: SqlExecutor = {
  query: async <R>(sql: string, args: readonly unknown[] = []) => {
    const name = `e${++n}`;
    await client.query({ name, text: sql, values: [...args] });
    const started = performance.now();
    const res = await client.query({ name, text: sql, values: [...args] });
    times.push(`${(performance.now() - started).toFixed(1)} ms`);
    if (explain) {
      const e = await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE ${name}(${args.map(literal).join(',')})`);
      console.log(e.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n'));
    }
    return res.rows as R[];
  },
  execute: async () => 0,
};
for (const [label, identity] of who) {
  const source: RecordSource = {
    db: executor,
    identity,
    projectId: PROJECT,
    filters: {},
    compileContext: (args) => ({ args, scope: { projectIds: [PROJECT] }, fhirBase: 'http://x/fhir/R4', depth: 0 }),
  };
  const readers = {
    compartment: async (after: After | undefined) => ({ rows: await readMatches(source, PATIENT, after, PAGE), plan: undefined }),
    // As the walk's cursor does, later pages read from the side the first was read from (RECOUNT=1: counted again).
    referenced: (after: After | undefined, plan: ReferencedPlan | undefined) => readReferenced(source, PATIENT, after, PAGE, forced ?? (recount ? undefined : plan)),
  };
  for (const [part, read] of Object.entries(readers)) {
    if (!parts.includes(part)) continue;
    times.length = 0;
    let after: After | undefined;
    let plan: ReferencedPlan | undefined;
    let rows = 0;
    const keys = createHash('sha256');
    for (let page = 0; page < PAGES; page++) {
      const { rows: got, plan: chosen } = await read(after, plan);
      plan = chosen;
      rows += got.length;
      for (const row of got) keys.update(`${row.resourceType}/${row.id}\n`);
      if (got.length < PAGE) break;
      const last = got[got.length - 1];
      after = { resourceType: last.resourceType, id: last.id };
    }
    console.log(`${label}, ${part}: ${rows} rows (${keys.digest('hex').slice(0, 12)}); statements ${times.join(', ')}`);
  }
}
await client.end();
