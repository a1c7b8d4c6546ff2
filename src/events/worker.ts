import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { StorageServices } from '../storage/repository.js';
import { systemRepository } from '../auth/accounts.js';
import { AuditBatches } from './audit.js';
import { activeSubscriptions, matches } from './matching.js';
import { claimDue, fanOut, finish, retryLater, type OutboxRow } from './outbox.js';
import { sendRestHook, type AttemptResult, type RestHookDelivery } from './rest-hook.js';
import { maxAttemptsOf, type Subscription } from './subscription.js';
import { changedVersion } from './versions.js';

/** Delivers to a Bot (`endpoint: Bot/{id}`): supplied by the composition root, which owns the router. */
export type BotDelivery = (delivery: RestHookDelivery & { projectId: string; botId: string }) => Promise<AttemptResult>;

/** Tells the servers holding sockets of websocket Subscriptions of a matched version (src/events/websocket). */
export type WebSocketEvents = (row: OutboxRow, subscriptionIds: readonly string[]) => Promise<void>;

export type EventConfig = Pick<
  Config,
  | 'fhirBaseUrl' | 'accurateCountThreshold' | 'searchMaxValueLength' | 'searchMaxParameters' | 'searchMaxOrValues'
  | 'subscriptionTimeoutMs' | 'subscriptionRetryBaseMs' | 'subscriptionPollMs' | 'subscriptionConcurrency' | 'outboundAllowPrivateAddresses'
>;

/** Longest wait between two attempts of one delivery. */
const MAX_BACKOFF_MS = 60 * 60 * 1000;

/**
 * The outbox's workers of one server: claim due rows (changes to match, deliveries to make), up
 * to SUBSCRIPTION_CONCURRENCY at once, each on its own so a slow endpoint holds only its own
 * place until its timeout. Woken by this server's commits of recorded changes and by the retries
 * it scheduled, and every SUBSCRIPTION_POLL_MS for what other servers left (a lease that passed).
 */
export class EventWorker {
  private inFlight = new Set<Promise<void>>();
  private pumping = false;
  private again = false;
  private closed = false;
  private poll: NodeJS.Timeout | undefined;
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly audit: AuditBatches;
  private readonly leaseMs: number;
  /** Aborts the requests in flight when the server stops: their rows become due again when their lease passes. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly db: Database,
    private readonly storage: StorageServices,
    private readonly config: EventConfig,
    private readonly log: Logger,
    private readonly botDelivery?: BotDelivery,
    private readonly webSocketEvents?: WebSocketEvents,
  ) {
    this.audit = new AuditBatches(storage, log);
    // Longer than an attempt (its request, then its AuditEvent and its row): a lease that passes
    // while its server still works on it gives a second delivery, never a lost one.
    this.leaseMs = 2 * config.subscriptionTimeoutMs + 5_000;
  }

  start(): void {
    this.poll = setInterval(() => this.kick(), this.config.subscriptionPollMs);
    this.kick();
  }

  /** Looks for due rows now. */
  kick(): void {
    if (!this.closed) void this.pump();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poll);
    for (const timer of this.retries) clearTimeout(timer);
    this.stopping.abort();
    await Promise.all(this.inFlight);
    await this.audit.flush();
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
        const free = this.config.subscriptionConcurrency - this.inFlight.size;
        if (free <= 0 || this.closed) break;
        const rows = await claimDue(this.db, free, this.leaseMs);
        for (const row of rows) this.run(row);
        if (rows.length === free) this.again = true;
      } while (this.again && !this.closed);
    } catch (error) {
      this.log.warn({ err: error }, 'claiming subscription events failed; retrying at the next poll');
    } finally {
      this.pumping = false;
    }
  }

  private run(row: OutboxRow): void {
    const work = this.handle(row).finally(() => {
      this.inFlight.delete(work);
      this.kick();
    });
    this.inFlight.add(work);
  }

  private async handle(row: OutboxRow): Promise<void> {
    try {
      if (row.subscriptionId === null) await this.match(row);
      else await this.deliver(row, row.subscriptionId);
    } catch (error) {
      this.log.warn({ err: error, event: row.id }, 'a subscription event failed; it will be retried');
      await this.retry(row).catch(() => undefined);
    }
  }

  /**
   * Replaces a change by one delivery per matching rest-hook Subscription; matching websocket
   * Subscriptions get their event sent once the change is done (no delivery row: no retries).
   */
  private async match(row: OutboxRow): Promise<void> {
    const repo = systemRepository(this.storage, row.projectId);
    const version = await changedVersion(repo, row);
    const matched: string[] = [];
    const webSockets: string[] = [];
    // Subscriptions often share their criteria (several receivers of one feed): one search each.
    const byCriteria = new Map<string, Promise<boolean>>();
    for (const subscription of await activeSubscriptions(this.db, this.config, row.projectId)) {
      const channel = subscription.channel?.type;
      if (channel !== 'rest-hook' && (channel !== 'websocket' || !this.webSocketEvents)) continue;
      const key = JSON.stringify([subscription.criteria, subscription.extension]);
      let found = byCriteria.get(key);
      if (!found) byCriteria.set(key, (found = matches(this.db, this.config, subscription, version)));
      if (await found) (channel === 'websocket' ? webSockets : matched).push(subscription.id!);
    }
    await fanOut(this.db, row, matched);
    if (webSockets.length > 0) await this.webSocketEvents!(row, webSockets);
  }

  private async deliver(row: OutboxRow, subscriptionId: string): Promise<void> {
    const repo = systemRepository(this.storage, row.projectId);
    const subscription = await repo.readResource('Subscription', subscriptionId).catch(() => undefined) as Subscription | undefined;
    // `$resend` naming a websocket Subscription: its event is sent as a matched one's is.
    if (subscription?.status === 'active' && subscription.channel?.type === 'websocket' && this.webSocketEvents) {
      if (await finish(this.db, row)) await this.webSocketEvents(row, [subscriptionId]);
      return;
    }
    // A Subscription deleted or turned off since stops its deliveries.
    if (!subscription || subscription.status !== 'active' || subscription.channel?.type !== 'rest-hook' || !subscription.channel.endpoint) {
      await finish(this.db, row);
      return;
    }
    const text = row.interaction === 'delete' ? undefined : (await repo.readHistoryVersion(row.resourceType, row.resourceId, row.versionId)).text ?? undefined;
    const delivery: RestHookDelivery = { eventId: row.id, subscription, interaction: row.interaction, reference: `${row.resourceType}/${row.resourceId}`, text };
    const started = new Date();
    const result = await this.attempt(delivery, row.projectId);
    this.audit.add({ projectId: row.projectId, subscriptionId, reference: delivery.reference, attempt: row.attempts, started, ended: new Date(), result });
    if (this.stopping.signal.aborted) return;
    if (result.ok || row.attempts >= maxAttemptsOf(subscription)) await finish(this.db, row);
    else await this.retry(row);
  }

  private attempt(delivery: RestHookDelivery, projectId: string): Promise<AttemptResult> {
    const endpoint = delivery.subscription.channel!.endpoint!;
    if (endpoint.startsWith('Bot/')) {
      if (!this.botDelivery) return Promise.resolve({ ok: false, error: 'this server cannot run bots' });
      return this.botDelivery({ ...delivery, projectId, botId: endpoint.slice('Bot/'.length) });
    }
    return sendRestHook(delivery, { timeoutMs: this.config.subscriptionTimeoutMs, allowPrivate: this.config.outboundAllowPrivateAddresses, signal: this.stopping.signal });
  }

  /** Due again after an exponential backoff; this server looks again then (others at their polls). */
  private async retry(row: OutboxRow): Promise<void> {
    const delay = Math.min(this.config.subscriptionRetryBaseMs * 2 ** Math.max(row.attempts - 1, 0), MAX_BACKOFF_MS);
    await retryLater(this.db, row, delay);
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.kick();
    }, delay + 5);
    this.retries.add(timer);
  }
}
