import type { SqlExecutor } from '../db/database.js';
import type { Change, ChangeLog } from '../storage/change-log.js';
import type { ActiveSubscriptions } from './active-subscriptions.js';
import { changeRow, insertChange, insertChangesFromJson } from './outbox.js';

/**
 * The storage change log of subscriptions: a write is recorded in the outbox only when its project
 * has an active Subscription (ActiveSubscriptions, kept in memory per project).
 *
 * AuditEvents are never recorded: deliveries write one per attempt, and a subscription on them
 * would feed itself (Medplum never sends them either).
 */
export class SubscriptionChangeLog implements ChangeLog {
  constructor(
    private readonly subscriptions: ActiveSubscriptions,
    private readonly onCommitted: () => void,
  ) {}

  records(db: SqlExecutor, projectId: string, resourceType: string): boolean | Promise<boolean> {
    if (resourceType === 'AuditEvent') return false;
    return this.subscriptions.of(db, projectId).then((list) => list.length > 0);
  }

  record(tx: SqlExecutor, change: Change): Promise<void> {
    return insertChange(tx, change);
  }

  insertFromJson(json: string): string {
    return insertChangesFromJson(json);
  }

  rowOf(change: Change): Record<string, unknown> {
    return changeRow(change);
  }

  committed(): void {
    this.onCommitted();
  }
}
