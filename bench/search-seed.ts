/**
 * Fills a PostgreSQL database for bench/search-plans.ts without starting a server: applies the
 * migrations, then bench/search-data.ts's generate() writes 100,000 Patients and 1,000,000
 * Observations into `search-bench` and a tenth of that into `search-bench-other` (1,210,000
 * resources, about six minutes on a shared 2-core machine). Nothing analyzes the tables.
 *
 *   createdb -h 127.0.0.1 -U postgres flint_search_big
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_big npx tsx bench/search-seed.ts
 *
 * BENCH_PATIENTS and BENCH_OBSERVATIONS change the sizes (the second project a tenth of them);
 * BENCH_ROW_LAYOUT: bench/search-data.ts.
 */
import pg from 'pg';
import type { SqlExecutor } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { generate } from './search-data.js';

const url = process.env.BENCH_DATABASE_URL;
if (!url) throw new Error('Set BENCH_DATABASE_URL to an empty PostgreSQL database');
const pool = new pg.Pool({ connectionString: url, max: 1 });
await migrate({
  transaction: async (work) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const tx: SqlExecutor = {
        query: async <R>(sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rows as R[],
        execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rowCount ?? 0,
      };
      const result = await work(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  },
});
await pool.end();
const patients = Number(process.env.BENCH_PATIENTS ?? 100_000);
const observations = Number(process.env.BENCH_OBSERVATIONS ?? 1_000_000);
console.log(await generate(url, 'search-bench', patients, observations, ''));
console.log(await generate(url, 'search-bench-other', patients / 10, observations / 10, 'o-'));
