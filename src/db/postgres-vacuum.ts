import pg from 'pg';

/**
 * VACUUM of the search tables on PostgreSQL, off the request path, for servers whose autovacuum is
 * off (docs/storage.md). What it buys is the visibility map: an index-only scan (an exact count, the
 * compartment rows of a patient's record) visits the table for every row on a page not marked
 * all-visible, and only VACUUM marks pages. It also reclaims the dead index rows that updates and
 * deletes leave.
 *
 * The decision reads what PostgreSQL keeps: a table's pages now (its size) against the pages its
 * visibility map counted at the last VACUUM or ANALYZE (`pg_class.relallvisible`; the statistics
 * keeper's ANALYZE refreshes it). A table is due when more than MIN_PAGES + SHARE of its pages are
 * not all-visible. Bounds: one table per round, one VACUUM at a time across the servers (a session
 * advisory lock), paced like autovacuum (cost delay 2 ms per 200 cost units), skipped when another
 * session holds the table, cancelled when the server closes.
 */

/** 1 MB: below it a table is read whole faster than its visibility map would save. */
const MIN_PAGES = 128;
/** Autovacuum's insert scale factor: a fifth of the table changed since its pages were marked. */
const SHARE = 0.2;
/** Autovacuum's own pacing (autovacuum_vacuum_cost_delay, vacuum_cost_limit). */
const COST_DELAY_MS = 2;
const COST_LIMIT = 200;
/** Any fixed number, the same on every server, other than the ANALYZE round's. */
const LOCK_KEY = 7_246_201_884;

/** One connection of its own: VACUUM cannot run in a transaction, and its settings and lock are the session's. */
export interface VacuumSession {
  query<R>(sql: string, args?: readonly unknown[]): Promise<R[]>;
  /** The backend's process id, to cancel its VACUUM. */
  readonly pid: number;
  end(): Promise<void>;
}

export function pgVacuumSession(databaseUrl: string): () => Promise<VacuumSession> {
  return async () => {
    const client = new pg.Client({ connectionString: databaseUrl, application_name: 'flint-vacuum' });
    await client.connect();
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    return {
      pid,
      query: async <R>(sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rows as R[],
      end: () => client.end(),
    };
  };
}

export interface VacuumCandidate {
  table: string;
  pages: number;
  notAllVisible: number;
}

/** The tables of `tables` that are due, the most pages not all-visible first. */
export function vacuumCandidates(session: Pick<VacuumSession, 'query'>, tables: readonly string[]): Promise<VacuumCandidate[]> {
  return session.query<VacuumCandidate>(
    `SELECT c.relname::text AS "table", s.pages, s.pages - least(c.relallvisible, s.pages) AS "notAllVisible"
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     CROSS JOIN LATERAL (SELECT (pg_relation_size(c.oid) / current_setting('block_size')::int)::int AS pages) s
     WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY($1::text[])
       AND s.pages - least(c.relallvisible, s.pages) > $2::int + $3::float8 * s.pages
     ORDER BY "notAllVisible" DESC, c.relname`,
    [[...tables], MIN_PAGES, SHARE],
  );
}

/**
 * One round: when no other server is vacuuming, VACUUM (ANALYZE) the most due table. The table
 * vacuumed, or undefined (none due, or another server's round).
 */
export async function vacuumMostDue(session: VacuumSession, tables: readonly string[]): Promise<string | undefined> {
  const [lock] = await session.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [LOCK_KEY]);
  if (!lock?.locked) return undefined;
  const [due] = await vacuumCandidates(session, tables);
  if (!due) return undefined;
  await session.query(`SET vacuum_cost_delay = ${COST_DELAY_MS}`);
  await session.query(`SET vacuum_cost_limit = ${COST_LIMIT}`);
  await session.query('SET statement_timeout = 0');
  await session.query(`VACUUM (ANALYZE, SKIP_LOCKED) "${due.table}"`);
  return due.table;
}
