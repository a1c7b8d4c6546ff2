import { randomUUID } from 'node:crypto';
import type { SqlExecutor, TransactionalSql } from '../db/database.js';
import type { Change } from '../storage/change-log.js';

/**
 * The event_outbox table. A row without subscription is a committed change still to be matched;
 * a row with one is a delivery. Both are claimed the same way: any server takes due rows with
 * FOR UPDATE SKIP LOCKED (no two servers take one row) and moves `dueAt` a lease ahead, so a
 * row whose server died becomes due again when the lease passes. `attempts` counts the claims;
 * a server finishes a row only while it still holds it (the attempts it claimed at).
 */
export interface OutboxRow {
  id: string;
  projectId: string;
  resourceType: string;
  resourceId: string;
  versionId: string;
  interaction: Change['interaction'];
  subscriptionId: string | null;
  attempts: number;
}

const COLUMNS = '"id", "projectId", "resourceType", "resourceId", "versionId", "interaction", "subscriptionId", "attempts"';

export async function insertChange(tx: SqlExecutor, change: Change): Promise<void> {
  await tx.execute(
    'INSERT INTO "event_outbox" ("id", "projectId", "resourceType", "resourceId", "versionId", "interaction") VALUES ($1, $2, $3, $4, $5, $6)',
    [randomUUID(), change.projectId, change.resourceType, change.id, change.versionId, change.interaction],
  );
}

/** Claims up to `limit` due rows for `leaseMs`. */
export function claimDue(db: SqlExecutor, limit: number, leaseMs: number): Promise<OutboxRow[]> {
  return db.query<OutboxRow>(
    `UPDATE "event_outbox" SET "dueAt" = now() + $1::int * interval '1 millisecond', "attempts" = "attempts" + 1
     WHERE "id" IN (SELECT "id" FROM "event_outbox" WHERE "dueAt" <= now() ORDER BY "dueAt" LIMIT $2::int FOR UPDATE SKIP LOCKED)
     RETURNING ${COLUMNS}`,
    [leaseMs, limit],
  );
}

/** Removes a row this server holds; false when it no longer holds it (its lease passed and another took it). */
export async function finish(db: SqlExecutor, row: OutboxRow): Promise<boolean> {
  const removed = await db.query('DELETE FROM "event_outbox" WHERE "id" = $1 AND "attempts" = $2::int RETURNING "id"', [row.id, row.attempts]);
  return removed.length > 0;
}

/** Makes a held row due again in `delayMs`. */
export async function retryLater(db: SqlExecutor, row: OutboxRow, delayMs: number): Promise<void> {
  await db.execute(
    `UPDATE "event_outbox" SET "dueAt" = now() + $3::int * interval '1 millisecond' WHERE "id" = $1 AND "attempts" = $2::int`,
    [row.id, row.attempts, delayMs],
  );
}

/** Replaces a held change by its deliveries, in one transaction: done once even if two servers raced for it. */
export async function fanOut(db: TransactionalSql, change: OutboxRow, subscriptionIds: readonly string[]): Promise<string[]> {
  return db.transaction(async (tx) => {
    if (!(await finish(tx, change))) return [];
    return insertDeliveries(tx, change, subscriptionIds);
  });
}

/** New deliveries of one version, due now; returns their ids (the event ids receivers see). */
export async function insertDeliveries(
  tx: SqlExecutor,
  version: Pick<OutboxRow, 'projectId' | 'resourceType' | 'resourceId' | 'versionId' | 'interaction'>,
  subscriptionIds: readonly string[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const subscriptionId of subscriptionIds) {
    const id = randomUUID();
    ids.push(id);
    await tx.execute(
      'INSERT INTO "event_outbox" ("id", "projectId", "resourceType", "resourceId", "versionId", "interaction", "subscriptionId") VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [id, version.projectId, version.resourceType, version.resourceId, version.versionId, version.interaction, subscriptionId],
    );
  }
  return ids;
}
