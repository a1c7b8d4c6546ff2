import type { AuthService } from '../auth/service.js';
import type { Config } from '../config.js';
import type { SqlExecutor } from '../db/database.js';
import type { Attempt } from './audit.js';
import { writeAuditEvents } from './audit.js';
import { finish, retryLater, type OutboxRow } from './outbox.js';
import { sendRestHook, type AttemptResult, type RestHookDelivery } from './rest-hook.js';
import { maxAttemptsOf, type Subscription } from './subscription.js';

/** Delivers to a Bot (`endpoint: Bot/{id}`): supplied by the composition root, which owns the router. */
export type BotDelivery = (delivery: RestHookDelivery & { projectId: string; botId: string }) => Promise<AttemptResult>;

export type EventConfig = Pick<
  Config,
  | 'fhirBaseUrl' | 'accurateCountThreshold' | 'searchMaxValueLength' | 'searchMaxParameters' | 'searchMaxOrValues'
  | 'subscriptionTimeoutMs' | 'subscriptionRetryBaseMs' | 'subscriptionPollMs' | 'subscriptionConcurrency' | 'subscriptionBusySharePercent' | 'subscriptionBusyMaxMs' | 'outboundAllowPrivateAddresses'
>;

/** Longest wait between two attempts of one delivery. */
const MAX_BACKOFF_MS = 60 * 60 * 1000;

/** What attempts need of their server. */
export interface Attempts {
  readonly config: EventConfig;
  readonly auth: AuthService;
  readonly botDelivery?: BotDelivery;
  /** Aborted when the server stops: attempts end, their rows become due again when their lease passes. */
  readonly signal: AbortSignal;
  /** Bounds the attempts in flight (SUBSCRIPTION_CONCURRENCY). */
  readonly slots: Slots;
}

/** The wait before attempt `attempts + 1`: exponential, capped. */
export function backoffMs(config: EventConfig, attempts: number): number {
  return Math.min(config.subscriptionRetryBaseMs * 2 ** Math.max(attempts - 1, 0), MAX_BACKOFF_MS);
}

/** One attempt to deliver, timed, once a slot is free. */
export async function attempt(on: Attempts, projectId: string, delivery: RestHookDelivery, number: number): Promise<Attempt> {
  await on.slots.take();
  try {
    const started = new Date();
    const result = await send(on, projectId, delivery).catch((error: unknown): AttemptResult => ({ ok: false, error: error instanceof Error ? error.message : String(error) }));
    return { projectId, subscriptionId: delivery.subscription.id!, reference: delivery.reference, attempt: number, started, ended: new Date(), result };
  } finally {
    on.slots.give();
  }
}

function send(on: Attempts, projectId: string, delivery: RestHookDelivery): Promise<AttemptResult> {
  const endpoint = delivery.subscription.channel!.endpoint!;
  if (endpoint.startsWith('Bot/')) {
    if (!on.botDelivery) return Promise.resolve({ ok: false, error: 'this server cannot run bots' });
    return on.botDelivery({ ...delivery, projectId, botId: endpoint.slice('Bot/'.length) });
  }
  return sendRestHook(delivery, { timeoutMs: on.config.subscriptionTimeoutMs, allowPrivate: on.config.outboundAllowPrivateAddresses, signal: on.signal });
}

/**
 * Records the outcome of an attempt of a delivery row this server holds, in one transaction with
 * its AuditEvent: finished when it succeeded or was the last one allowed, else due again after
 * the backoff. Nothing when the row is no longer held (its lease passed: another server has it).
 * Returns the delay of the next attempt, if any.
 */
export async function recordOutcome(on: Attempts, row: OutboxRow, subscription: Subscription, done: Attempt): Promise<number | undefined> {
  const last = done.result.ok || row.attempts >= maxAttemptsOf(subscription);
  const delay = last ? undefined : backoffMs(on.config, row.attempts);
  await on.auth.inTransaction(async (repoOf, tx: SqlExecutor) => {
    const held = delay === undefined ? await finish(tx, row) : await retryLater(tx, row, delay);
    if (held) await writeAuditEvents(repoOf, [done]);
  });
  return delay;
}

/** A counting semaphore: at most `size` holders, the others wait in order. */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  /** How many wait for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
