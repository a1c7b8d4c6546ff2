/**
 * What the server does in the foreground, as the composition root supplies it (admission control):
 * how many requests are in flight, the most that were at once since the last call, how many have
 * arrived so far, and a call each time the last one in flight ends.
 */
export interface Foreground {
  inFlight(): number;
  peakInFlight(): number;
  arrivals(): number;
  onIdle(listener: () => void): void;
}

/** The longest pause between two batches while the server is busy, whatever the share. */
const MAX_PAUSE_MS = 5_000;
/**
 * Requests at once that make a crowd: deliveries yield only when at least this many were in
 * flight together since the last look. A steady rate of writes that the server serves one after
 * the other (100 writes/s) never makes one, so its deliveries never wait for it, whereas clients
 * that keep the server saturated do: and if deliveries slow requests down until they overlap,
 * yielding speeds them up again (it does not feed on itself).
 */
const CROWD = 2;
/**
 * How long the server must stay without requests (none in flight, none arrived) before a pause
 * ends early: clients that send their next request as soon as an answer arrives leave shorter
 * gaps, even when a busy event loop reads their requests late.
 */
const IDLE_GRACE_MS = 10;

/**
 * Deliveries are background work. While the server is crowded with requests and deliveries fall
 * behind the writes (a claim found a backlog), the batch that just ended is
 * followed by a pause, so that batches take at most `percent` of the time (a batch of `w` ms
 * waits `w × (100 − percent) / percent` ms, at most 5 s); the outbox holds what waits,
 * durably. Deliveries that keep up are never paused, a server without requests claims again at
 * once, and a pause ends as soon as the server has had no request for a moment: a quiet server,
 * or one whose deliveries keep up with its writes, delivers immediately, and a backlog left by a
 * burst of writes drains at full speed once the burst is over. Deliveries that stay behind for
 * longer than `maxYieldMs` stop yielding until they catch up, so writes that never stop cannot
 * delay them without bound.
 */
export class DeliveryShare {
  private pausedUntil = 0;
  /** Since when every claim found a backlog (deliveries behind the writes); undefined when they keep up. */
  private behindSince: number | undefined;
  private resumeTimer: NodeJS.Timeout | undefined;
  private idleCheck: NodeJS.Timeout | undefined;

  constructor(
    private readonly percent: number,
    /** How long deliveries yield while they stay behind; then they compete with requests until they catch up. */
    private readonly maxYieldMs: number,
    private readonly foreground: Foreground | undefined,
    private readonly resume: () => void,
  ) {
    if (percent < 100) foreground?.onIdle(() => this.checkIdle());
  }

  /**
   * Whether a crowd of requests was in flight at some moment since the last look: a busy server
   * has gaps between an answer and the next request, and deliveries must not take such a gap for
   * a quiet server.
   */
  busy(): boolean {
    if (this.percent >= 100 || !this.foreground) return false;
    return this.foreground.peakInFlight() >= CROWD;
  }

  /** Whether a batch may be claimed now (no pause running). */
  mayClaim(): boolean {
    return this.pausedUntil === 0 || performance.now() >= this.pausedUntil;
  }

  /** A claim found a backlog (`behind`: deliveries fall behind the writes) or not (they caught up). */
  claimed(behind: boolean): void {
    if (!behind) this.behindSince = undefined;
    else this.behindSince ??= performance.now();
  }

  /** A batch of a claim that found a backlog took `ms`: while the server is busy, the next one waits its turn. */
  worked(ms: number): void {
    const now = performance.now();
    if (this.behindSince === undefined || !this.busy() || now - this.behindSince > this.maxYieldMs) return;
    const pause = Math.min((ms * (100 - this.percent)) / this.percent, MAX_PAUSE_MS);
    const until = now + pause;
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => this.end(), pause);
  }

  close(): void {
    clearTimeout(this.resumeTimer);
    clearTimeout(this.idleCheck);
    this.pausedUntil = 0;
  }

  private checkIdle(): void {
    if (this.pausedUntil === 0 || this.idleCheck || !this.foreground) return;
    const { foreground } = this;
    const arrivals = foreground.arrivals();
    this.idleCheck = setTimeout(() => {
      this.idleCheck = undefined;
      if (foreground.inFlight() > 0) return; // its end calls checkIdle() again
      if (foreground.arrivals() === arrivals) this.end();
      else this.checkIdle();
    }, IDLE_GRACE_MS);
  }

  private end(): void {
    clearTimeout(this.resumeTimer);
    this.resumeTimer = undefined;
    if (this.pausedUntil === 0) return;
    this.pausedUntil = 0;
    this.resume();
  }
}
