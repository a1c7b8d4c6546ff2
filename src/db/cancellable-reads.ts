import type { QueryOptions, Row, SqlExecutor } from './database.js';

/**
 * A request's reads as `db` runs them, each sent with the signal of the request's client going
 * away: the statement in flight is cancelled (PostgreSQL), one waiting for the connection is
 * dropped (PGlite), and none is sent after (both databases).
 * `clientGone` is asked on the first statement only. Writes go through as they are: a write runs
 * whole or, cancelled by nothing, not at all.
 */
export class CancellableReads implements SqlExecutor {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clientGone: () => AbortSignal,
  ) {}

  query<R = Row>(sql: string, args?: readonly unknown[], options?: QueryOptions): Promise<R[]> {
    return this.db.query<R>(sql, args, { ...options, signal: this.clientGone() });
  }

  execute(sql: string, args?: readonly unknown[], options?: QueryOptions): Promise<number> {
    return this.db.execute(sql, args, options);
  }
}
