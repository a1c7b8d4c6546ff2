import { WAIT_SLOTS, WAITING, WITHDRAWN } from './worker-protocol.js';

/**
 * The main thread's side of the wait states shared with the PGlite worker (worker-protocol.ts):
 * hands out slots to statements that may be withdrawn, and withdraws them.
 */
export class WaitSlots {
  readonly buffer = new SharedArrayBuffer(WAIT_SLOTS * Int32Array.BYTES_PER_ELEMENT);
  private readonly states = new Int32Array(this.buffer);
  private readonly free = Array.from({ length: WAIT_SLOTS }, (_, i) => WAIT_SLOTS - 1 - i);

  /** A slot in state WAITING, or undefined when all are taken (the statement then cannot be withdrawn). */
  take(): number | undefined {
    const slot = this.free.pop();
    if (slot !== undefined) Atomics.store(this.states, slot, WAITING);
    return slot;
  }

  /** Gives `slot` back once the worker has answered its statement (it reads the slot until then). */
  give(slot: number): void {
    this.free.push(slot);
  }

  /** Withdraws the statement of `slot` if it has not started: true when it never will. */
  withdraw(slot: number): boolean {
    return Atomics.compareExchange(this.states, slot, WAITING, WITHDRAWN) === WAITING;
  }
}
