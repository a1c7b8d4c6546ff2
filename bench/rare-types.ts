/**
 * The statistics keeper's rare-type rule (src/db/rare-types.ts) on a database: for each search
 * table, what one check costs (wall time and the backend's CPU, averaged over ROUNDS checks) and
 * which types it finds outgrown, with the planner's estimate of the table's Practitioner rows.
 * With PRACTITIONERS=n it first writes n Practitioners (resource, string and token rows, as
 * bench/search-data.ts writes Patients) into the project `search-bench`, as a rare type arriving
 * in a big analyzed table; then the keeper's round (analyzeDue) runs once, timed, and the checks again.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_big [PRACTITIONERS=1000] [ROUNDS=20] npx tsx bench/rare-types.ts
 */
import pg from 'pg';
import type { SqlExecutor } from '../src/db/database.js';
import { ANALYZED_TABLES } from '../src/db/plan-statistics.js';
import { PostgresStatistics } from '../src/db/postgres-statistics.js';
import { outgrownTypes } from '../src/db/rare-types.js';
import { cpuSeconds } from './process-cpu.js';

const url = process.env.BENCH_DATABASE_URL;
if (!url) throw new Error('Set BENCH_DATABASE_URL');
const rounds = Number(process.env.ROUNDS ?? 20);
const client = new pg.Client({ connectionString: url });
await client.connect();
const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
const executor: SqlExecutor = {
  query: async <R>(sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rows as R[],
  execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rowCount ?? 0,
};

async function practitionerEstimate(table: string): Promise<number> {
  const { rows } = await client.query<{ 'QUERY PLAN': { Plan: { 'Plan Rows': number } }[] }>(
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${table} WHERE "resourceType" = 'Practitioner'`,
  );
  return rows[0]['QUERY PLAN'][0].Plan['Plan Rows'];
}

async function checkAll(label: string): Promise<void> {
  console.log(label);
  for (const table of ANALYZED_TABLES) {
    const [cpu0, t0] = [cpuSeconds(pid), performance.now()];
    let found: { type: string; rows: number }[] = [];
    for (let i = 0; i < rounds; i++) found = await outgrownTypes(executor, table, new Map());
    const [cpu1, t1] = [cpuSeconds(pid), performance.now()];
    const estimate = await practitionerEstimate(table);
    console.log(
      `  ${table}: ${((t1 - t0) / rounds).toFixed(2)} ms, backend CPU ${(((cpu1 - cpu0) * 1000) / rounds).toFixed(2)} ms per check;` +
        ` Practitioner estimate ${estimate}; outgrown: ${found.map((f) => `${f.type} ${f.rows}`).join(', ') || 'none'}`,
    );
  }
}

await checkAll('before');
const practitioners = Number(process.env.PRACTITIONERS ?? 0);
if (practitioners > 0) {
  await client.query(
    `CREATE TEMP TABLE gen_pr AS SELECT g, 'prac-' || g || '-' || gen_random_uuid() AS id FROM generate_series(1, $1::int) g`,
    [practitioners],
  );
  await client.query('BEGIN');
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Practitioner', id, 'search-bench', gen_random_uuid(), now(), false,
            json_build_object('resourceType', 'Practitioner', 'id', id, 'name', json_build_array(json_build_object('family', 'Doc' || g)), 'gender', 'female')
     FROM gen_pr`,
  );
  await client.query(
    `INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact)
     SELECT 'search-bench', 'Practitioner', id, 1, 'family', 'doc' || g, 'Doc' || g FROM gen_pr`,
  );
  await client.query(
    `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
     SELECT 'search-bench', 'Practitioner', id, 1, 'gender', NULL, 'female', NULL FROM gen_pr`,
  );
  await client.query('COMMIT');
  // The change counts reach pg_stat_user_tables when the writing backend reports them.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await checkAll(`after ${practitioners} Practitioners`);
  const keeper = new PostgresStatistics(
    { ...executor, transaction: async (work) => work(executor) },
    0,
    (error) => console.error(error),
  );
  const [cpu0, t0] = [cpuSeconds(pid), performance.now()];
  const analyzed = await keeper.analyzeDue();
  console.log(`keeper round: analyzed ${analyzed.join(', ') || 'nothing'} in ${(performance.now() - t0).toFixed(0)} ms, backend CPU ${((cpuSeconds(pid) - cpu0) * 1000).toFixed(0)} ms`);
  await checkAll('after the keeper round');
}
await client.end();
