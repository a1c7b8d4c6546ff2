import type { SqlExecutor } from '../db/database.js';

/** One committed create, update or delete, as the change log records it. */
export interface Change {
  readonly resourceType: string;
  readonly id: string;
  readonly projectId: string;
  readonly versionId: string;
  readonly interaction: 'create' | 'update' | 'delete';
}

/**
 * Where every resource write of the repository is recorded in its own transaction, whatever its
 * type (the subscriptions' outbox, src/events): the composition root supplies it, since storage
 * cannot know who listens. `records` is asked before the write chooses its path and must be cheap:
 * a write it declines costs nothing more, and a create it accepts is written in a transaction
 * instead of a grouped statement.
 */
export interface ChangeLog {
  /** `db`: where a lookup may go (the write's transaction when there is one: it may hold the only connection). */
  records(db: SqlExecutor, projectId: string, resourceType: string): boolean | Promise<boolean>;
  record(tx: SqlExecutor, change: Change): Promise<void>;
  /** After the commit of a recorded change: the log may start on it at once. */
  committed(): void;
}
