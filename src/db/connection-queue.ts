import { STARTED, WAITING, WITHDRAWN } from './worker-protocol.js';

/**
 * The embedded database's one connection, handed out in turn on the worker thread. PGlite queues
 * the statements it is given and runs every one; Flint hands it one statement (or one transaction)
 * at a time, so that a statement still waiting here can be dropped before PGlite ever sees it: its
 * client gone or its statement timeout passed (worker-protocol.ts, wait states). A transaction
 * holds the connection from its begin to its commit or rollback, and its own statements do not
 * queue here (they would wait for themselves), so none of them is ever dropped; its begin may be,
 * while it waits (nothing of the transaction has run then).
 */
export class ConnectionQueue {
  private busy = false;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly states: Int32Array) {}

  /** Waits for the connection; the caller gives it back with release(). */
  async take(): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy = false;
  }

  /**
   * Runs `work` when the connection is its turn, unless the statement was withdrawn meanwhile or
   * its deadline passed while it waited: then `work` never runs and the answer says why.
   */
  async run<T>(work: () => Promise<T>, slot?: number, deadline?: number): Promise<T> {
    await this.takeFor(slot, deadline);
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /**
   * Waits for the connection for the statement (or transaction) of `slot`, as `run` does; the
   * caller gives it back with release(). A transaction's begin takes it so: dropped while it
   * waits, it never started; once it has the connection, it holds it to its commit or rollback.
   */
  async takeFor(slot?: number, deadline?: number): Promise<void> {
    await this.take();
    try {
      this.claim(slot, deadline);
    } catch (error) {
      this.release();
      throw error;
    }
  }

  private claim(slot: number | undefined, deadline: number | undefined): void {
    if (slot === undefined) return;
    const late = deadline !== undefined && Date.now() > deadline;
    const state = Atomics.compareExchange(this.states, slot, WAITING, late ? WITHDRAWN : STARTED);
    if (state !== WAITING) throw new StatementDropped(false);
    if (late) throw new StatementDropped(true);
  }
}

/** A statement dropped before it started: by its deadline (reported as a timeout), or withdrawn by the main thread. */
export class StatementDropped extends Error {
  constructor(readonly timedOut: boolean) {
    super(timedOut ? 'canceling statement due to statement timeout' : 'withdrawn');
  }
}
