import { ALL_KEYS, type InvalidationBus } from '../cache/invalidation.js';

/**
 * Slows down repeated failed logins, per account and per client address: after `limit` failures
 * within the window, further attempts get 429 with Retry-After until the window ends. Kept in
 * memory (per server, safe to lose); once shared through the invalidation bus, every failure and
 * every clearing is counted by every server, so N servers do not give an attacker N times the attempts.
 */
export interface ThrottleRule {
  readonly limit: number;
  readonly windowMs: number;
}

export const ACCOUNT_RULE: ThrottleRule = { limit: 5, windowMs: 15 * 60_000 };
export const ADDRESS_RULE: ThrottleRule = { limit: 30, windowMs: 15 * 60_000 };
/**
 * Wrong secrets sent for one client by HTTP Basic, from every address together. An address is
 * stopped at ADDRESS_RULE's limit first, so only guesses spread over ten or more addresses reach
 * this one: a flood from one address does not lock the client out for its other callers.
 */
export const CLIENT_RULE: ThrottleRule = { limit: 300, windowMs: 15 * 60_000 };

const FAILED = 'login-failed';
const CLEARED = 'login-cleared';

export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; since: number }>();
  private bus: InvalidationBus | undefined;

  constructor(private readonly capacity = 100_000) {}

  /** From now on failures and clearings go through `bus`, which brings them back here too. */
  shareThrough(bus: InvalidationBus): void {
    bus.subscribe(FAILED, (message) => {
      const failure = parseFailure(message);
      if (failure) this.count(failure.key, failure.rule);
    });
    // ALL_KEYS after an interruption means notices were lost: failures are undercounted then,
    // which wiping the others would only make worse.
    bus.subscribe(CLEARED, (key) => {
      if (key !== ALL_KEYS) this.failures.delete(key);
    });
    this.bus = bus;
  }

  /** Seconds to wait before `key` may try again, or 0. */
  retryAfter(key: string, rule: ThrottleRule, now = Date.now()): number {
    const entry = this.failures.get(key);
    if (!entry || now - entry.since >= rule.windowMs) return 0;
    return entry.count >= rule.limit ? Math.ceil((entry.since + rule.windowMs - now) / 1000) : 0;
  }

  fail(key: string, rule: ThrottleRule): void {
    if (this.bus) void this.bus.publish(FAILED, `${rule.limit}:${rule.windowMs}:${key}`);
    else this.count(key, rule);
  }

  clear(key: string): void {
    if (this.bus) void this.bus.publish(CLEARED, key);
    else this.failures.delete(key);
  }

  private count(key: string, rule: ThrottleRule, now = Date.now()): void {
    const entry = this.failures.get(key);
    if (!entry || now - entry.since >= rule.windowMs) {
      if (this.failures.size >= this.capacity) this.failures.delete(this.failures.keys().next().value!);
      this.failures.set(key, { count: 1, since: now });
    } else {
      entry.count++;
    }
  }
}

/** `<limit>:<windowMs>:<key>`, as fail() sends it; anything else (ALL_KEYS included) is ignored. */
function parseFailure(message: string): { key: string; rule: ThrottleRule } | undefined {
  const match = /^(\d+):(\d+):(.+)$/s.exec(message);
  return match ? { rule: { limit: Number(match[1]), windowMs: Number(match[2]) }, key: match[3] } : undefined;
}
