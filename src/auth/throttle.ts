/**
 * Slows down repeated failed logins, per account and per client address: after `limit` failures
 * within the window, further attempts get 429 with Retry-After until the window ends. Kept in
 * memory (per server, safe to lose): with N servers an attacker gets N times the attempts.
 */
export interface ThrottleRule {
  readonly limit: number;
  readonly windowMs: number;
}

export const ACCOUNT_RULE: ThrottleRule = { limit: 5, windowMs: 15 * 60_000 };
export const ADDRESS_RULE: ThrottleRule = { limit: 30, windowMs: 15 * 60_000 };

export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; since: number }>();

  constructor(private readonly capacity = 100_000) {}

  /** Seconds to wait before `key` may try again, or 0. */
  retryAfter(key: string, rule: ThrottleRule, now = Date.now()): number {
    const entry = this.failures.get(key);
    if (!entry || now - entry.since >= rule.windowMs) return 0;
    return entry.count >= rule.limit ? Math.ceil((entry.since + rule.windowMs - now) / 1000) : 0;
  }

  fail(key: string, rule: ThrottleRule, now = Date.now()): void {
    const entry = this.failures.get(key);
    if (!entry || now - entry.since >= rule.windowMs) {
      if (this.failures.size >= this.capacity) this.failures.delete(this.failures.keys().next().value!);
      this.failures.set(key, { count: 1, since: now });
    } else {
      entry.count++;
    }
  }

  clear(key: string): void {
    this.failures.delete(key);
  }
}
