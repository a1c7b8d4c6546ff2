import { ALL_KEYS, changedResourceOf, resourceChangedTopic, type InvalidationBus } from '../cache/invalidation.js';
import type { SqlExecutor } from '../db/database.js';
import type { Change, ChangeLog } from '../storage/change-log.js';
import { insertChange } from './outbox.js';

/**
 * The storage change log of subscriptions: a write is recorded in the outbox only when its project
 * has an active Subscription. Whether it has is kept per project in memory, loaded on a project's
 * first write and dropped by the cache notice of every committed Subscription write (on every
 * server), so a project without subscriptions pays one lookup per server, then nothing.
 *
 * AuditEvents are never recorded: deliveries write one per attempt, and a subscription on them
 * would feed itself (Medplum never sends them either).
 */
export class SubscriptionChangeLog implements ChangeLog {
  private readonly subscribed = new Map<string, Promise<boolean>>();

  constructor(private readonly onCommitted: () => void) {}

  /** Keeps the per-project flags in step with Subscription writes of every server. */
  listen(bus: InvalidationBus): void {
    bus.subscribe(resourceChangedTopic('Subscription'), (key) => {
      if (key === ALL_KEYS) this.subscribed.clear();
      else {
        const changed = changedResourceOf(key);
        if (changed) this.subscribed.delete(changed.projectId);
      }
    });
  }

  records(db: SqlExecutor, projectId: string, resourceType: string): boolean | Promise<boolean> {
    if (resourceType === 'AuditEvent') return false;
    let flag = this.subscribed.get(projectId);
    if (!flag) {
      flag = hasActiveSubscription(db, projectId);
      this.subscribed.set(projectId, flag);
      flag.catch(() => this.subscribed.delete(projectId));
    }
    return flag;
  }

  record(tx: SqlExecutor, change: Change): Promise<void> {
    return insertChange(tx, change);
  }

  committed(): void {
    this.onCommitted();
  }
}

async function hasActiveSubscription(db: SqlExecutor, projectId: string): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM "resource" WHERE "resourceType" = 'Subscription' AND "projectId" = $1 AND NOT "deleted" AND "content"->>'status' = 'active' LIMIT 1`,
    [projectId],
  );
  return rows.length > 0;
}
