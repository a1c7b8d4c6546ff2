import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { AuthService } from '../auth/service.js';
import type { Database } from '../db/database.js';
import type { StorageServices } from '../storage/repository.js';
import { systemRepository } from '../auth/accounts.js';
import type { ActiveSubscriptions } from './active-subscriptions.js';
import { attempt, backoffMs, recordOutcome, Slots, type BotDelivery, type EventConfig } from './attempts.js';
import { authorSees, type AuthorViewers } from './author-access.js';
import { deliverChanges, type ChangeBatches, type ChannelListener } from './change-batch.js';
import { claimDue, finish, retryLater, type OutboxRow } from './outbox.js';
import type { RestHookDelivery } from './rest-hook.js';
import type { Subscription } from './subscription.js';
import { unreadVersion } from './versions.js';
import { DeliveryShare, type Foreground } from './yielding.js';

export type { BotDelivery, EventConfig } from './attempts.js';

/** The most rows one claim takes, and the most claimed batches a server works on at once. */
const BATCH_ROWS = 100;
const MAX_BATCHES = 8;
/**
 * While requests crowd the server: one batch at a time, of at most this many rows; one that found
 * a backlog (BEHIND_ROWS) is followed by its pause (DeliveryShare), so the backlog is worked off in
 * small slices between the requests.
 */
const BUSY_BATCH_ROWS = 20;
/**
 * While requests crowd the server, a claim of this many changes or more means deliveries fall behind
 * the writes: fewer accumulate between two claims when deliveries keep up with writes at a
 * steady rate, but a burst of writes gathers more, and deliveries that kept up with a burst
 * would take the cores from it.
 */
const BEHIND_ROWS = 5;

/**
 * The outbox's workers of one server: claim due rows in batches, changes to match (matched and
 * first attempted together, deliverChanges) and deliveries to attempt again, with at most
 * SUBSCRIPTION_CONCURRENCY attempts in flight. Woken by this server's commits of recorded changes
 * and by the retries it scheduled, and every SUBSCRIPTION_POLL_MS for what other servers left (a
 * lease that passed). While requests crowd the server, deliveries yield to them
 * (SUBSCRIPTION_BUSY_SHARE_PERCENT, DeliveryShare): what waits stays in the outbox.
 */
export class EventWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private pumping = false;
  private again = false;
  private closed = false;
  private poll: NodeJS.Timeout | undefined;
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly batches: ChangeBatches;
  private readonly share: DeliveryShare;
  /** Aborts the requests in flight when the server stops: their rows become due again when their lease passes. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly db: Database,
    storage: StorageServices,
    auth: AuthService,
    config: EventConfig,
    subscriptions: ActiveSubscriptions,
    channels: ReadonlyMap<string, ChannelListener>,
    authors: AuthorViewers,
    private readonly log: Logger,
    botDelivery?: BotDelivery,
    foreground?: Foreground,
  ) {
    this.share = new DeliveryShare(config.subscriptionBusySharePercent, config.subscriptionBusyMaxMs, foreground, () => this.kick());
    // Each attempt in flight listens to it until its request ends.
    setMaxListeners(config.subscriptionConcurrency + 10, this.stopping.signal);
    this.batches = {
      config, auth, botDelivery, storage, subscriptions, channels, authors,
      signal: this.stopping.signal,
      slots: new Slots(config.subscriptionConcurrency),
      // Longer than an attempt (its request, then its AuditEvent and its row): a lease that passes
      // while its server still works on it gives a second delivery, never a lost one.
      leaseMs: 2 * config.subscriptionTimeoutMs + 5_000,
      wakeIn: (delayMs) => this.wakeIn(delayMs),
    };
  }

  start(): void {
    this.poll = setInterval(() => this.kick(), this.batches.config.subscriptionPollMs);
    this.kick();
  }

  /** Looks for due rows now. */
  kick(): void {
    if (!this.closed) void this.pump();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poll);
    this.share.close();
    for (const timer of this.retries) clearTimeout(timer);
    this.stopping.abort();
    await Promise.all(this.inFlight);
  }

  /** Claims while there is room: a batch in hand and attempts waiting for a slot both count. */
  private hasRoom(busy: boolean): boolean {
    // A pause holds whoever looks: it ends when the server has had no request for a moment.
    if (!this.share.mayClaim()) return false;
    if (busy) return this.inFlight.size === 0;
    return this.inFlight.size < MAX_BATCHES && this.batches.slots.queued < this.batches.config.subscriptionConcurrency;
  }

  private async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        const busy = this.share.busy();
        if (!this.hasRoom(busy) || this.closed) break;
        const limit = busy ? BUSY_BATCH_ROWS : BATCH_ROWS;
        const started = performance.now();
        const rows = await claimDue(this.db, limit, this.batches.leaseMs);
        const behind = rows.length >= (busy ? BEHIND_ROWS : limit);
        this.share.claimed(behind);
        if (rows.length > 0) this.run(rows, started, behind);
        if (rows.length === limit) this.again = true;
      } while (this.again && !this.closed);
    } catch (error) {
      this.log.warn({ err: error }, 'claiming subscription events failed; retrying at the next poll');
    } finally {
      this.pumping = false;
    }
  }

  /** `behind`: the claim found a backlog (see BEHIND_ROWS). */
  private run(rows: OutboxRow[], started: number, behind: boolean): void {
    const work = this.handle(rows).finally(() => {
      this.inFlight.delete(work);
      if (behind) this.share.worked(performance.now() - started);
      this.kick();
    });
    this.inFlight.add(work);
  }

  private async handle(rows: OutboxRow[]): Promise<void> {
    const changes = rows.filter((row) => row.subscriptionId === null);
    const deliveries = rows.filter((row) => row.subscriptionId !== null);
    await Promise.all([
      changes.length > 0 && deliverChanges(this.batches, changes).catch((error: unknown) => this.failed(changes, error)),
      ...deliveries.map((row) => this.deliverAgain(row, row.subscriptionId!).catch((error: unknown) => this.failed([row], error))),
    ]);
  }

  private async failed(rows: OutboxRow[], error: unknown): Promise<void> {
    this.log.warn({ err: error, events: rows.map((row) => row.id) }, 'subscription events failed; they will be retried');
    await Promise.all(rows.map((row) => this.retry(row, backoffMs(this.batches.config, row.attempts)).catch(() => undefined)));
  }

  /** A delivery whose earlier attempt failed (or a `$resend` of one Subscription). */
  private async deliverAgain(row: OutboxRow, subscriptionId: string): Promise<void> {
    const { storage, subscriptions } = this.batches;
    const repo = systemRepository(storage, row.projectId);
    const subscription = (await subscriptions.of(this.db, row.projectId)).find((item) => item.id === subscriptionId)
      // One created on another server may not be in this server's list yet.
      ?? ((await repo.readResource('Subscription', subscriptionId).catch(() => undefined)) as Subscription | undefined);
    // An author who lost access since the first attempt (or never had it: `$resend`) gets nothing more.
    if (subscription && !(await authorSees(this.batches.authors(row.projectId, subscription), unreadVersion(row).change))) {
      await finish(this.db, row);
      return;
    }
    // `$resend` naming a websocket Subscription: its event is sent as a matched one's is (no retries).
    const channel = subscription?.status === 'active' ? subscription.channel?.type : undefined;
    const listener = channel && channel !== 'rest-hook' ? this.batches.channels.get(channel) : undefined;
    if (listener) {
      if (await finish(this.db, row)) listener(subscription!, unreadVersion(row));
      return;
    }
    // A Subscription deleted or turned off since stops its deliveries.
    if (!subscription || subscription.status !== 'active' || subscription.channel?.type !== 'rest-hook' || !subscription.channel.endpoint) {
      await finish(this.db, row);
      return;
    }
    const text = row.interaction === 'delete' ? undefined : (await repo.readHistoryVersion(row.resourceType, row.resourceId, row.versionId)).text ?? undefined;
    const delivery: RestHookDelivery = { eventId: row.id, subscription, interaction: row.interaction, reference: `${row.resourceType}/${row.resourceId}`, text };
    const done = await attempt(this.batches, row.projectId, delivery, row.attempts);
    if (this.stopping.signal.aborted) return;
    const delay = await recordOutcome(this.batches, row, subscription, done);
    if (delay !== undefined) this.wakeIn(delay);
  }

  /** Due again after `delay`; this server looks again then (others at their polls). */
  private async retry(row: OutboxRow, delay: number): Promise<void> {
    await retryLater(this.db, row, delay);
    this.wakeIn(delay);
  }

  private wakeIn(delay: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.kick();
    }, delay + 5);
    this.retries.add(timer);
  }
}
