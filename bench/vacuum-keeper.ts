/**
 * The statistics keeper's VACUUM rounds (src/db/postgres-vacuum.ts) on a database, one after the
 * other until no search table is due, each with what it cost: wall time, the backend's CPU, its
 * reads and writes from /proc (root or the postgres user; 0 when unreadable) and the WAL it wrote.
 * Run before and after it whatever the VACUUM should speed up (bench/search-plans.ts's exact counts).
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_search_big [FAST=1] npx tsx bench/vacuum-keeper.ts
 *
 * FAST=1 vacuums without the keeper's pacing (vacuum_cost_delay 0), to compare.
 */
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { ANALYZED_TABLES } from '../src/db/plan-statistics.js';
import { pgVacuumSession, vacuumCandidates, vacuumMostDue, type VacuumSession } from '../src/db/postgres-vacuum.js';
import { cpuSeconds } from './process-cpu.js';

const url = process.env.BENCH_DATABASE_URL;
if (!url) throw new Error('Set BENCH_DATABASE_URL');

function io(pid: number): { read: number; write: number } {
  const path = `/proc/${pid}/io`;
  if (!existsSync(path)) return { read: 0, write: 0 };
  const text = readFileSync(path, 'utf8');
  const field = (name: string) => Number(text.match(new RegExp(`^${name}: (\\d+)`, 'm'))?.[1] ?? 0);
  return { read: field('read_bytes'), write: field('write_bytes') };
}

const admin = new pg.Client({ connectionString: url });
await admin.connect();
const walNow = async () => BigInt((await admin.query<{ lsn: string }>(`SELECT (pg_current_wal_lsn() - '0/0')::text AS lsn`)).rows[0].lsn);
const mb = (bytes: number | bigint) => (Number(bytes) / 1048576).toFixed(0);
console.log('due:', (await vacuumCandidates({ query: async (sql, args) => (await admin.query(sql, [...(args ?? [])])).rows }, ANALYZED_TABLES)).map((c) => `${c.table} ${c.notAllVisible}/${c.pages} pages`).join(', '));
const open = pgVacuumSession(url);
for (;;) {
  const session: VacuumSession = await open();
  if (process.env.FAST === '1') {
    const query = session.query.bind(session);
    Object.assign(session, { query: (sql: string, args?: readonly unknown[]) => query(sql.startsWith('SET vacuum_cost_delay') ? 'SET vacuum_cost_delay = 0' : sql, args) });
  }
  const [cpu0, io0, wal0, t0] = [cpuSeconds(session.pid), io(session.pid), await walNow(), performance.now()];
  const table = await vacuumMostDue(session, ANALYZED_TABLES);
  const [cpu1, io1, wal1, t1] = [cpuSeconds(session.pid), io(session.pid), await walNow(), performance.now()];
  await session.end();
  if (!table) break;
  console.log(
    `${table}: ${((t1 - t0) / 1000).toFixed(1)} s, backend CPU ${(cpu1 - cpu0).toFixed(1)} s, read ${mb(io1.read - io0.read)} MB, written ${mb(io1.write - io0.write)} MB, WAL ${mb(wal1 - wal0)} MB`,
  );
}
await admin.end();
