import type { SqlExecutor, TransactionKind } from './database.js';
import { ANALYZED_TABLES } from './plan-statistics.js';
import { MIN_ROWS, typesOutgrew } from './rare-types.js';
import { vacuumCandidates, vacuumMostDue, type VacuumSession } from './postgres-vacuum.js';

/**
 * Planner statistics on PostgreSQL, whatever autovacuum does. Search plans are written not to
 * depend on fresh statistics, but the planner still reads them for what the plans leave open
 * (estimates, `_total=estimate`), and a server whose autovacuum is off, slowed down or busy with
 * other databases would keep the statistics of an empty database for ever. This is the second line:
 * every `intervalMs` one server (the one that takes the advisory lock; the others skip the round)
 * reads the change counts PostgreSQL keeps (pg_stat_user_tables) and analyzes each search table
 * whose changes since its last ANALYZE passed autovacuum's own threshold, 50 + 10% of its rows,
 * or in which a resource type's rows outgrew what the statistics believe of it (rare-types.ts: a
 * few thousand rows of a type the last ANALYZE did not see in a big table).
 * With `vacuum` (STATISTICS_VACUUM=on), each round also starts a VACUUM of the most due table when
 * none is running (postgres-vacuum.ts); it runs on a connection of its own, beside the rounds.
 */

const BASE_THRESHOLD = 50;
const SCALE_FACTOR = 0.1;
/** Any fixed number, the same on every server: the lock that makes one of them do a round. */
const LOCK_KEY = 7_246_201_883;

export class PostgresStatistics {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private vacuuming: Promise<unknown> | undefined;
  private vacuumPid: number | undefined;
  private closed = false;
  /** Rows of each `table|type` when it last outgrew the table's statistics (rare-types.ts). */
  private readonly outgrownRows = new Map<string, number>();

  constructor(
    private readonly db: SqlExecutor & { transaction<T>(work: (tx: SqlExecutor) => Promise<T>, kind?: TransactionKind): Promise<T> },
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
    /** Opens the session a VACUUM runs on; absent: the keeper never vacuums. */
    private readonly vacuumSession?: () => Promise<VacuumSession>,
  ) {}

  start(): void {
    if (this.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.running ??= this.analyzeDue()
        .catch(this.onError)
        .finally(() => (this.running = undefined));
      if (this.vacuumSession) {
        this.vacuuming ??= this.vacuumDue()
          .catch((error: unknown) => this.closed || this.onError(error))
          .finally(() => (this.vacuuming = undefined));
      }
    }, this.intervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    // A VACUUM of a large table can run for minutes: cancelled, it keeps the pages it marked.
    if (this.vacuumPid !== undefined) await this.db.query('SELECT pg_cancel_backend($1::int)', [this.vacuumPid]).catch(() => undefined);
    await Promise.all([this.running, this.vacuuming]);
  }

  /** Vacuums the most due search table (postgres-vacuum.ts); its name, or undefined (none due, no vacuum session, or another server's round). */
  async vacuumDue(): Promise<string | undefined> {
    if (!this.vacuumSession || this.closed) return undefined;
    // Most rounds find nothing due: asked on the pool, so that only a VACUUM opens a connection of its own.
    if ((await vacuumCandidates(this.db, ANALYZED_TABLES)).length === 0) return undefined;
    const session = await this.vacuumSession();
    this.vacuumPid = session.pid;
    try {
      return await vacuumMostDue(session, ANALYZED_TABLES);
    } finally {
      this.vacuumPid = undefined;
      // Ending the session releases its advisory lock.
      await session.end().catch(() => undefined);
    }
  }

  /** Analyzes the search tables that are due; the tables it analyzed (none when another server holds the round). */
  analyzeDue(): Promise<string[]> {
    return this.db.transaction(async (tx) => {
      const [lock] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [LOCK_KEY]);
      if (!lock?.locked) return [];
      const tables = await tx.query<{ table: string; changed: boolean; due: boolean }>(
        `SELECT relname::text AS "table", n_mod_since_analyze >= $4::int AS changed,
                n_mod_since_analyze > $2::int + $3::float8 * n_live_tup AS due
         FROM pg_stat_user_tables
         WHERE schemaname = current_schema() AND relname = ANY($1::text[])
         ORDER BY relname`,
        [[...ANALYZED_TABLES], BASE_THRESHOLD, SCALE_FACTOR, MIN_ROWS],
      );
      const due: string[] = [];
      for (const { table, changed, due: changedEnough } of tables) {
        // Without MIN_ROWS changes since its last ANALYZE, no type can have outgrown a table's statistics by that many.
        if (changedEnough || (changed && (await typesOutgrew(tx, table, this.outgrownRows)))) due.push(table);
      }
      // One table at a time: each ANALYZE samples at most 30,000 rows, whatever the table's size.
      // SKIP_LOCKED: a table being vacuumed (which analyzes it too) is left for the next round.
      for (const table of due) await tx.execute(`ANALYZE (SKIP_LOCKED) "${table}"`);
      return due;
    }, 'bulk');
  }

}
