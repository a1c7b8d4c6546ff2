import type { SqlExecutor, TransactionalSql } from '../db/database.js';
import type { Change, ChangeLog } from './change-log.js';

/**
 * The repository's side of the change log (subscriptions' outbox): whether a write of a type must
 * be recorded, the record inside the write's transaction, and the notice once it committed. Without
 * a log nothing is recorded. A plain create is recorded by its own statement instead (logFor).
 */
export class ChangeRecorder {
  constructor(
    private readonly db: TransactionalSql,
    private readonly log: ChangeLog | undefined,
  ) {}

  /** Whether writes of `resourceType` in the project are recorded (they then need a transaction). */
  async records(db: SqlExecutor, projectId: string, resourceType: string): Promise<boolean> {
    return this.log !== undefined && (await this.log.records(db, projectId, resourceType));
  }

  /** The log that records writes of `resourceType` in the project, or undefined. */
  async logFor(db: SqlExecutor, projectId: string, resourceType: string): Promise<ChangeLog | undefined> {
    return (await this.records(db, projectId, resourceType)) ? this.log : undefined;
  }

  /** Records `change` in the write's transaction; whether it did (the caller then calls committed). */
  async record(tx: SqlExecutor, change: Change): Promise<boolean> {
    if (!this.log || !(await this.log.records(tx, change.projectId, change.resourceType))) return false;
    await this.log.record(tx, change);
    return true;
  }

  /** After a transaction that recorded a change: at once, or at the end of the joined transaction. */
  committed(): void {
    const log = this.log!;
    this.db.afterCommit(() => log.committed());
  }
}
