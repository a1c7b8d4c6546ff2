import type { DatabaseKind, QueryOptions, Row, SqlExecutor, TransactionalSql } from './database.js';

/** One open transaction that the resource store's writes join (see TransactionalSql). */

export class JoinedTransaction implements TransactionalSql {
  private readonly effects: (() => void)[] = [];

  constructor(
    private readonly tx: SqlExecutor,
    readonly kind: DatabaseKind,
  ) {}

  get joined(): SqlExecutor {
    return this.tx;
  }

  query<R = Row>(sql: string, args?: readonly unknown[], _options?: QueryOptions): Promise<R[]> {
    return this.tx.query<R>(sql, args);
  }

  execute(sql: string, args?: readonly unknown[]): Promise<number> {
    return this.tx.execute(sql, args);
  }

  /** Nested work runs in the open transaction: a failure rolls back everything the caller joined. */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return work(this);
  }

  afterCommit(effect: () => void): void {
    this.effects.push(effect);
  }

  /** Runs `work` in one transaction of `db` that its writes join; their after-commit effects run once it committed. */
  static async run<T>(db: TransactionalSql, kind: DatabaseKind, work: (joined: JoinedTransaction) => Promise<T>): Promise<T> {
    let joined: JoinedTransaction | undefined;
    const result = await db.transaction((tx) => work((joined = new JoinedTransaction(tx, kind))));
    joined?.committed();
    return result;
  }

  /** Called by the owner of the transaction once it has committed. */
  committed(): void {
    for (const effect of this.effects.splice(0)) effect();
  }
}
