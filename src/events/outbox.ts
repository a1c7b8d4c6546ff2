import { createHash } from 'node:crypto';
import { newId } from '../storage/ids.js';
import type { SqlExecutor } from '../db/database.js';
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
    [newId(), change.projectId, change.resourceType, change.id, change.versionId, change.interaction],
  );
}

const CHANGE_COLUMNS = '"id", "projectId", "resourceType", "resourceId", "versionId", "interaction"';

/** An insert of the changes in a JSON array of changeRow objects (`json`: an SQL expression), for a write's own statement. */
export function insertChangesFromJson(json: string): string {
  return (
    `INSERT INTO "event_outbox" (${CHANGE_COLUMNS}) SELECT ${CHANGE_COLUMNS} FROM json_to_recordset(${json}) ` +
    'AS x("id" uuid, "projectId" text, "resourceType" text, "resourceId" text, "versionId" text, "interaction" text)'
  );
}

/** A change as insertChangesFromJson reads it, with the id of its outbox row. */
export function changeRow(change: Change): Record<string, unknown> {
  return { id: newId(), projectId: change.projectId, resourceType: change.resourceType, resourceId: change.id, versionId: change.versionId, interaction: change.interaction };
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

/** Removes the rows this server still holds of `rows`; returns their ids. */
export async function finishHeld(db: SqlExecutor, rows: readonly OutboxRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const removed = await db.query<{ id: string }>(
    `DELETE FROM "event_outbox" o USING unnest($1::uuid[], $2::int[]) AS held("id", "attempts")
     WHERE o."id" = held."id" AND o."attempts" = held."attempts" RETURNING o."id"`,
    [rows.map((row) => row.id), rows.map((row) => row.attempts)],
  );
  return new Set(removed.map((row) => row.id));
}

/**
 * The id of the delivery of one change to one Subscription, the event id its receiver sees: the
 * same whichever server matches the change, and however often (a change whose server died before
 * it finished is matched again), so a receiver can tell a delivery it already had.
 */
export function deliveryId(changeId: string, subscriptionId: string): string {
  const hex = createHash('sha256').update(`${changeId}/${subscriptionId}`).digest('hex');
  // A version-8 UUID (RFC 9562: custom), variant 10.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16], 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A delivery whose first attempt failed: due again in `delayMs`, one attempt counted. */
export interface LaterDelivery {
  readonly id: string;
  readonly change: OutboxRow;
  readonly subscriptionId: string;
  readonly delayMs: number;
}

/** Deliveries to be attempted again, in one statement (a row already there is left as it is). */
export async function insertLater(tx: SqlExecutor, later: readonly LaterDelivery[]): Promise<void> {
  if (later.length === 0) return;
  const column = <T>(pick: (item: LaterDelivery) => T) => later.map(pick);
  await tx.execute(
    `INSERT INTO "event_outbox" ("id", "projectId", "resourceType", "resourceId", "versionId", "interaction", "subscriptionId", "attempts", "dueAt")
     SELECT d."id", d."projectId", d."resourceType", d."resourceId", d."versionId", d."interaction", d."subscriptionId", 1, now() + d."delay" * interval '1 millisecond'
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[])
       AS d("id", "projectId", "resourceType", "resourceId", "versionId", "interaction", "subscriptionId", "delay")
     ON CONFLICT ("id") DO NOTHING`,
    [
      column((item) => item.id), column((item) => item.change.projectId), column((item) => item.change.resourceType), column((item) => item.change.resourceId),
      column((item) => item.change.versionId), column((item) => item.change.interaction), column((item) => item.subscriptionId), column((item) => item.delayMs),
    ],
  );
}

/** Makes a held row due again in `delayMs`; false when it is no longer held. */
export async function retryLater(db: SqlExecutor, row: OutboxRow, delayMs: number): Promise<boolean> {
  const updated = await db.query(
    `UPDATE "event_outbox" SET "dueAt" = now() + $3::int * interval '1 millisecond' WHERE "id" = $1 AND "attempts" = $2::int RETURNING "id"`,
    [row.id, row.attempts, delayMs],
  );
  return updated.length > 0;
}

/** New deliveries of one version, due now; returns their ids (the event ids receivers see). */
export async function insertDeliveries(
  tx: SqlExecutor,
  version: Pick<OutboxRow, 'projectId' | 'resourceType' | 'resourceId' | 'versionId' | 'interaction'>,
  subscriptionIds: readonly string[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const subscriptionId of subscriptionIds) {
    const id = newId();
    ids.push(id);
    await tx.execute(
      'INSERT INTO "event_outbox" ("id", "projectId", "resourceType", "resourceId", "versionId", "interaction", "subscriptionId") VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [id, version.projectId, version.resourceType, version.resourceId, version.versionId, version.interaction, subscriptionId],
    );
  }
  return ids;
}
