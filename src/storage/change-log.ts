import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';

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
 * a write it declines costs nothing more. A plain create it accepts carries its record in its
 * own statement (`insertFromJson`), grouped with other creates as any create is.
 */
export interface ChangeLog {
  /** `db`: where a lookup may go (the write's transaction when there is one: it may hold the only connection). */
  records(db: SqlExecutor, projectId: string, resourceType: string): boolean | Promise<boolean>;
  record(tx: SqlExecutor, change: Change): Promise<void>;
  /**
   * The same record as a clause of a create's own statement, so that creates in a project that
   * records them are still written together (group commit): a data-modifying statement that
   * writes the changes listed by `rowOf` in the JSON array `json` (an SQL expression).
   */
  insertFromJson(json: string): string;
  rowOf(change: Change): Record<string, unknown>;
  /** After the commit of a recorded change: the log may start on it at once. */
  committed(): void;
}

/** The creation of a stamped resource as a change. */
export function creationOf(resource: Resource): Change {
  return { resourceType: resource.resourceType, id: resource.id!, projectId: resource.meta!.project!, versionId: resource.meta!.versionId!, interaction: 'create' };
}

/** Changes a write's own statement records, with the log that says how. */
export interface RecordedChanges {
  readonly log: ChangeLog;
  readonly changes: readonly Change[];
}
