import { MIN_ROWS, typesOutgrew } from './rare-types.js';

/**
 * Planner statistics for the embedded database. PostgreSQL's autovacuum analyzes a table once
 * about a tenth of it has changed; PGlite runs no autovacuum (nor collects the change counts it
 * reads), so without this its planner never has statistics and guesses row counts: a GraphQL page
 * of 100 Observations costs PGlite less CPU for its search statement with statistics than without
 * (measured: see bench/RESULTS.md), and plans that guess wrong get worse as tables grow.
 *
 * The same rule as autovacuum's, counted here: after 50 + 10% of the resources there were at the
 * last ANALYZE have been written, the search tables are analyzed once writes pause (QUIET_MS with
 * none, or at most MAX_DELAY_MS after the first pending one), table by table so that queries
 * waiting in between are not held up for the whole run. A database opened with rows but never
 * analyzed is analyzed soon after start. After every MIN_ROWS writes below that, the tables in
 * which a resource type's rows outgrew what the statistics believe are analyzed (rare-types.ts,
 * the rule PostgreSQL's keeper applies too): a rare type arriving in a big database.
 */

/** Tables the search statements read (the others are small or have their own access paths). */
export const ANALYZED_TABLES = [
  'resource',
  'token_index',
  'string_index',
  'reference_index',
  'date_index',
  'number_index',
  'quantity_index',
  'uri_index',
  'composite_index',
] as const;

/** Half PostgreSQL's default: each table's sample is 15,000 rows at most, so one table's ANALYZE stays short. */
const STATISTICS_TARGET = 50;
const QUIET_MS = 1000;
const MAX_DELAY_MS = 60_000;
const BASE_THRESHOLD = 50;
const SCALE_FACTOR = 0.1;

export interface StatisticsDatabase {
  query<R>(sql: string, args?: readonly unknown[]): Promise<R[]>;
  exec(sql: string): Promise<void>;
}

export class PlanStatistics {
  private pendingWrites = 0;
  private rowsAtLastAnalyze = 0;
  private firstPendingAt: number | undefined;
  /** pendingWrites when the search tables were last checked for outgrown types (rare-types.ts). */
  private checkedAt = 0;
  private readonly outgrownRows = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private closed = false;

  constructor(
    private readonly db: StatisticsDatabase,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** After opening: a database with resources that were never analyzed is analyzed once it is quiet. */
  start(): void {
    this.firstPendingAt = Date.now();
    this.pendingWrites = Number.POSITIVE_INFINITY;
    this.schedule(QUIET_MS);
  }

  /** A write statement ran (a resource write is one statement with its index rows). */
  noteWrite(): void {
    if (this.closed) return;
    this.pendingWrites += 1;
    this.firstPendingAt ??= Date.now();
    this.schedule(Math.min(QUIET_MS, Math.max(0, this.firstPendingAt + MAX_DELAY_MS - Date.now())));
  }

  /** Stops scheduling; waits for a run in progress. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Runs the check now (tests and the timer); whether it analyzed. */
  async analyzeIfDue(): Promise<boolean> {
    if (this.running) await this.running;
    if (this.closed) return false;
    const due = this.pendingWrites >= BASE_THRESHOLD + SCALE_FACTOR * this.rowsAtLastAnalyze;
    // Below the 10% rule, a rare type's rows may still have outgrown what the statistics believe:
    // checked once per MIN_ROWS writes, as PostgreSQL's keeper checks after that many changes.
    const check = !due && this.pendingWrites - this.checkedAt >= MIN_ROWS;
    if (!due && !check) return false;
    const run = due ? this.analyze().then(() => true) : this.analyzeOutgrown();
    this.running = run.finally(() => (this.running = undefined));
    // Awaited here, so that a failed run is the caller's error rather than an unhandled rejection.
    await this.running;
    return run;
  }

  private schedule(delay: number): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.analyzeIfDue().catch(this.onError), delay);
    this.timer.unref();
  }

  private async analyze(): Promise<void> {
    const started = this.pendingWrites;
    const [row] = await this.db.query<{ analyzed: boolean; rows: number | null }>(
      `SELECT c.reltuples >= 0 AS analyzed, (SELECT count(*)::int FROM resource) AS rows
       FROM pg_class c WHERE c.oid = to_regclass('public.resource')`,
    );
    // No resource table yet (migrations not run), or a start-up check on a database that already has statistics.
    if (!row || (started === Number.POSITIVE_INFINITY && row.analyzed) || row.rows === 0) {
      this.reset(row?.rows ?? 0, started);
      return;
    }
    await this.analyzeTables(ANALYZED_TABLES);
    this.reset(row.rows ?? 0, started);
  }

  /** Analyzes the tables in which a resource type outgrew its statistics (rare-types.ts); whether there were any. */
  private async analyzeOutgrown(): Promise<boolean> {
    this.checkedAt = this.pendingWrites;
    const due: string[] = [];
    for (const table of ANALYZED_TABLES) if (await typesOutgrew(this.db, table, this.outgrownRows)) due.push(table);
    if (due.length === 0) return false;
    await this.analyzeTables(due);
    return true;
  }

  private async analyzeTables(tables: readonly string[]): Promise<void> {
    await this.db.exec(`SET default_statistics_target = ${STATISTICS_TARGET}`);
    try {
      for (const table of tables) await this.db.exec(`ANALYZE ${table}`);
    } finally {
      await this.db.exec('RESET default_statistics_target');
    }
  }

  /** After a run: writes noted while it ran still count towards the next one. */
  private reset(rows: number, counted = this.pendingWrites): void {
    this.checkedAt = 0;
    this.pendingWrites = Number.isFinite(counted) ? Math.max(0, this.pendingWrites - counted) : 0;
    this.firstPendingAt = this.pendingWrites > 0 ? Date.now() : undefined;
    this.rowsAtLastAnalyze = rows;
  }
}
