import { systemRepository } from '../auth/accounts.js';
import type { StorageServices } from '../storage/repository.js';
import type { ActiveSubscriptions } from './active-subscriptions.js';
import { attempt, backoffMs, recordOutcome, type Attempts } from './attempts.js';
import { visibleToAuthors, type AuthorViewers } from './author-access.js';
import { writeAuditEvents, type Attempt } from './audit.js';
import { changedVersions } from './versions.js';
import { matchChanges, needsPrevious, type ChangedVersion } from './matching.js';
import { deliveryId, finishHeld, insertLater, type LaterDelivery, type OutboxRow } from './outbox.js';
import type { RestHookDelivery } from './rest-hook.js';
import { maxAttemptsOf, type Subscription } from './subscription.js';

/**
 * How long a batch waits for its first attempts before it records their outcome: an attempt
 * still running then becomes a delivery row of its own, so an endpoint that never answers holds
 * its own row until its timeout, never the batch.
 */
const BATCH_WAIT_MS = 1_000;

/** Subscriptions of a channel other than rest-hook (WebSocket) hear of their matches here. */
export type ChannelListener = (subscription: Subscription, version: ChangedVersion) => void;

export interface ChangeBatches extends Attempts {
  readonly storage: StorageServices;
  readonly subscriptions: ActiveSubscriptions;
  readonly channels: ReadonlyMap<string, ChannelListener>;
  /** What each Subscription's author may see: a match it may not see is not delivered, on any channel. */
  readonly authors: AuthorViewers;
  /** The lease of a claimed row: how long a slow attempt's own row stays with this server. */
  readonly leaseMs: number;
  /** Looks for due rows again in `delayMs` (a retry this server scheduled). */
  readonly wakeIn: (delayMs: number) => void;
}

interface Pending {
  readonly row: OutboxRow;
  readonly subscription: Subscription;
  readonly delivery: RestHookDelivery;
  readonly attempt: Promise<Attempt>;
  settled?: Attempt;
}

/**
 * Matches claimed changes and makes their first delivery attempts at once, then records it all in
 * one transaction: the changes leave the outbox, failed deliveries come back as rows due after
 * their backoff, and the AuditEvents of every attempt are written. A server that dies before that
 * commit leaves the changes to be matched again when their lease passes (at least once; the event
 * ids are derived from the change and the Subscription, so receivers see the same ones).
 */
export async function deliverChanges(on: ChangeBatches, rows: readonly OutboxRow[]): Promise<void> {
  const byProject = new Map<string, OutboxRow[]>();
  for (const row of rows) {
    const list = byProject.get(row.projectId);
    if (list) list.push(row);
    else byProject.set(row.projectId, [row]);
  }
  const pending = (await Promise.all([...byProject].map(([projectId, list]) => startAttempts(on, projectId, list)))).flat();
  await settledOrLater(pending);
  if (on.signal.aborted) return;
  const later: LaterDelivery[] = [];
  const attempts: { rowId: string; attempt: Attempt }[] = [];
  const running: Pending[] = [];
  for (const item of pending) {
    const id = item.delivery.eventId;
    if (!item.settled) {
      running.push(item);
      later.push({ id, change: item.row, subscriptionId: item.subscription.id!, delayMs: on.leaseMs });
      continue;
    }
    attempts.push({ rowId: item.row.id, attempt: item.settled });
    if (!item.settled.result.ok && maxAttemptsOf(item.subscription) > 1) later.push({ id, change: item.row, subscriptionId: item.subscription.id!, delayMs: backoffMs(on.config, 1) });
  }
  let held = new Set<string>();
  await on.auth.inTransaction(async (repoOf, tx) => {
    held = await finishHeld(tx, rows);
    await insertLater(tx, later.filter((item) => held.has(item.change.id)));
    await writeAuditEvents(repoOf, attempts.filter((item) => held.has(item.rowId)).map((item) => item.attempt));
  });
  if (later.length > running.length) on.wakeIn(backoffMs(on.config, 1));
  for (const item of running) if (held.has(item.row.id)) void finishRunning(on, item);
}

/** A slow first attempt, now its own row held by this server: its outcome recorded as a retry's is. */
async function finishRunning(on: ChangeBatches, item: Pending): Promise<void> {
  const done = await item.attempt;
  if (on.signal.aborted) return;
  const row: OutboxRow = { ...item.row, id: item.delivery.eventId, subscriptionId: item.subscription.id!, attempts: 1 };
  const delay = await recordOutcome(on, row, item.subscription, done).catch(() => undefined);
  if (delay !== undefined) on.wakeIn(delay);
}

async function settledOrLater(pending: Pending[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, BATCH_WAIT_MS)));
  const all = Promise.all(pending.map(async (item) => void (item.settled = await item.attempt)));
  await Promise.race([all, waited]);
  clearTimeout(timer);
}

/** Matches the changes of one project and starts the attempts of their rest-hook deliveries. */
async function startAttempts(on: ChangeBatches, projectId: string, rows: readonly OutboxRow[]): Promise<Pending[]> {
  const subscriptions = await on.subscriptions.of(on.storage.db, projectId);
  if (subscriptions.length === 0) return [];
  const versions = await changedVersions(systemRepository(on.storage, projectId), rows, needsPrevious(subscriptions));
  const matched = await visibleToAuthors(on.authors, projectId, versions, await matchChanges(on.storage.db, on.config, subscriptions, versions));
  const pending: Pending[] = [];
  matched.forEach((list, index) => {
    const row = rows[index];
    const version = versions[index];
    for (const subscription of list) {
      const type = subscription.channel?.type;
      if (type !== 'rest-hook') {
        if (type) on.channels.get(type)?.(subscription, version);
        continue;
      }
      if (!subscription.channel?.endpoint) continue;
      const delivery: RestHookDelivery = {
        eventId: deliveryId(row.id, subscription.id!), subscription, interaction: row.interaction, reference: `${row.resourceType}/${row.resourceId}`, text: version.text,
      };
      pending.push({ row, subscription, delivery, attempt: attempt(on, projectId, delivery, 1) });
    }
  });
  return pending;
}
