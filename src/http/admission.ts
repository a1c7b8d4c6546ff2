import { errors } from '../fhir/outcome.js';
import type { Config } from '../config.js';

export type AdmissionLimits = Pick<Config, 'admissionMaxInWork' | 'admissionMaxQueued' | 'admissionMaxQueuedPerProject' | 'admissionMaxWaitMs'>;

/** Ends a request's time in work: the next waiting request, if any, takes its place. */
export type Release = () => void;

interface Waiter {
  readonly admit: (release: Release) => void;
  readonly refuse: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
  /** Stops listening for its client's going away (once it leaves the queue, whichever way). */
  readonly forget: () => void;
}

/** What is going on now, for the health check. */
export interface AdmissionLoad {
  inWork: number;
  queued: number;
}

/**
 * Admission control of one server process (docs/overload.md): at most `admissionMaxInWork`
 * requests in work; more wait in a queue per project (its lane), and the lanes take turns
 * (round robin) when a place frees, so one project's flood delays another project's request by
 * about one turn, never by the flood's length. A request is refused with 503 and `Retry-After`
 * when its project's lane is full, when it has waited `admissionMaxWaitMs`, or when every lane
 * together is full and its own is the longest (otherwise the newest request of the longest lane
 * gives it its place).
 */
export class Admission {
  private inWork = 0;
  private queued = 0;
  /** Lanes with waiting requests, in turn order: the next turn is the first, which then goes last. */
  private readonly lanes = new Map<string, Waiter[]>();
  private readonly retryAfterSeconds: number;
  private readonly idleListeners: (() => void)[] = [];
  private arrived = 0;
  private peak = 0;

  constructor(private readonly limits: AdmissionLimits) {
    this.retryAfterSeconds = Math.max(1, Math.ceil(limits.admissionMaxWaitMs / 1000));
  }

  load(): AdmissionLoad {
    return { inWork: this.inWork, queued: this.queued };
  }

  /** Requests that have asked for a place so far. */
  arrivals(): number {
    return this.arrived;
  }

  /** The most requests in flight at once since the last call (then: those in flight now). */
  peakInFlight(): number {
    const peak = Math.max(this.peak, this.inFlight());
    this.peak = this.inFlight();
    return peak;
  }

  /** Requests in work or waiting for their turn. */
  inFlight(): number {
    return this.inWork + this.queued;
  }

  /** `listener` is called each time the last request in flight ends (background work may go on). */
  onIdle(listener: () => void): void {
    this.idleListeners.push(listener);
  }

  /**
   * A place in work for a request of `lane` (a project id): at once when there is one, else after
   * its wait. `clientGone` gives the signal of the request's client closing its connection, asked
   * for only when the request must wait: a request whose client has gone leaves the queue at once,
   * so that a client that gave up (a timeout, a closed tab) does not take a turn from the others
   * and run a search nobody will read.
   */
  enter(lane: string, clientGone?: () => AbortSignal): Release | Promise<Release> {
    this.arrived++;
    // Counted before it is admitted or queued: itself included.
    if (this.inWork + this.queued + 1 > this.peak) this.peak = this.inWork + this.queued + 1;
    if (this.inWork < this.limits.admissionMaxInWork && this.queued === 0) {
      this.inWork++;
      return this.releaser();
    }
    const waiting = this.lanes.get(lane) ?? [];
    if (waiting.length >= this.limits.admissionMaxQueuedPerProject) throw this.busy('its project has too many requests waiting');
    if (this.queued >= this.limits.admissionMaxQueued && !this.makeRoomFor(waiting.length)) throw this.busy('too many requests are waiting');
    const gone = clientGone?.();
    if (gone?.aborted) throw this.abandoned();
    return new Promise<Release>((admit, refuse) => {
      const timer = setTimeout(() => this.withdraw(lane, waiter, this.busy(`it waited ${this.limits.admissionMaxWaitMs} ms for its turn`)), this.limits.admissionMaxWaitMs);
      const onGone = () => this.withdraw(lane, waiter, this.abandoned());
      gone?.addEventListener('abort', onGone, { once: true });
      const waiter: Waiter = { admit, refuse, timer, forget: () => gone?.removeEventListener('abort', onGone) };
      waiting.push(waiter);
      if (waiting.length === 1) this.lanes.set(lane, waiting);
      this.queued++;
    });
  }

  /**
   * A place for work nobody waits for yet (a page read ahead), only while at least half the places
   * are free and no request waits: it never delays a request, and under load it is not done.
   */
  enterSpare(): Release | undefined {
    if (this.queued > 0 || (this.inWork + 1) * 2 > this.limits.admissionMaxInWork) return undefined;
    this.inWork++;
    return this.releaser();
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inWork--;
      this.admitNext();
      if (this.inWork === 0) for (const listener of this.idleListeners) listener();
    };
  }

  private admitNext(): void {
    const next = this.lanes.entries().next();
    if (next.done) return;
    const [lane, waiting] = next.value;
    const waiter = waiting.shift()!;
    this.lanes.delete(lane);
    if (waiting.length > 0) this.lanes.set(lane, waiting);
    this.queued--;
    clearTimeout(waiter.timer);
    waiter.forget();
    this.inWork++;
    waiter.admit(this.releaser());
  }

  /** Refuses the newest request of the longest lane when it is longer than `ownLength`; whether it did. */
  private makeRoomFor(ownLength: number): boolean {
    let longest: [string, Waiter[]] | undefined;
    for (const entry of this.lanes) if (!longest || entry[1].length > longest[1].length) longest = entry;
    if (!longest || longest[1].length <= ownLength) return false;
    const [lane, waiting] = longest;
    const evicted = waiting.pop()!;
    if (waiting.length === 0) this.lanes.delete(lane);
    this.queued--;
    clearTimeout(evicted.timer);
    evicted.forget();
    evicted.refuse(this.busy('too many requests are waiting, most of them from its project'));
    return true;
  }

  /** Takes a waiting request out of its lane (its wait ran out, or its client went away) and refuses it with `why`. */
  private withdraw(lane: string, waiter: Waiter, why: Error): void {
    const waiting = this.lanes.get(lane);
    const at = waiting?.indexOf(waiter) ?? -1;
    if (!waiting || at < 0) return;
    waiting.splice(at, 1);
    if (waiting.length === 0) this.lanes.delete(lane);
    this.queued--;
    clearTimeout(waiter.timer);
    waiter.forget();
    waiter.refuse(why);
  }

  /** The answer of a request whose client closed its connection while it waited: nobody reads it, but the request's log line and metrics say why it ended (499). */
  private abandoned(): Error {
    return errors.clientClosed('The client closed its connection while the request waited for its turn; it was not run.');
  }

  private busy(why: string): Error {
    return errors.unavailable(
      'transient',
      `The server is busy (${why}): retry after the number of seconds in Retry-After, with some random delay added.`,
      this.retryAfterSeconds,
    );
  }
}
