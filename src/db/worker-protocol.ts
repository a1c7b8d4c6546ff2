import type { IsolationLevel, SqlQuery } from '@prisma/driver-adapter-utils';

/**
 * Messages between the main thread and the PGlite worker; `id` pairs a response with its request.
 * A statement outside a transaction, and a transaction's begin, may name a `slot` of the shared
 * wait states (below) and a `deadline` (epoch milliseconds) past which it must not start.
 */
export type WorkerRequest =
  | { id: number; op: 'query' | 'execute'; query: SqlQuery; tx?: number; slot?: number; deadline?: number }
  | { id: number; op: 'script'; script: string }
  | { id: number; op: 'begin'; isolationLevel?: IsolationLevel; slot?: number; deadline?: number }
  | { id: number; op: 'commit' | 'rollback'; tx: number }
  | { id: number; op: 'close' };

export type WorkerResponse =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string; cause?: unknown } };

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;
export type WorkerCall = DistributiveOmit<WorkerRequest, 'id'>;
/** The calls that wait for the connection and may be withdrawn meanwhile, without their slot and deadline. */
export type WithdrawableCall = DistributiveOmit<Extract<WorkerCall, { op: 'query' | 'execute' | 'begin' }>, 'slot' | 'deadline' | 'tx'>;

/**
 * The state of a statement waiting for the embedded database's one connection, in memory both
 * threads share (an Int32Array over a SharedArrayBuffer, one slot per statement): the worker
 * thread is busy inside PGlite while a statement runs and reads no message until it ends, so a
 * message could not withdraw the statements queued behind it in time. Whichever thread moves a
 * slot out of WAITING first (Atomics.compareExchange) decides: the worker to STARTED when the
 * statement gets the connection, the main thread to WITHDRAWN when its client goes away or its
 * timeout passes.
 */
export const WAITING = 0;
export const STARTED = 1;
export const WITHDRAWN = 2;

/** Slots shared with the worker; statements sent while all are taken wait without one (and run). */
export const WAIT_SLOTS = 1024;

/** What PostgreSQL reports for a statement stopped by statement_timeout, as the Prisma adapter words it. */
export function statementTimeoutCause(): Record<string, unknown> {
  const message = 'canceling statement due to statement timeout';
  return { kind: 'postgres', code: '57014', severity: 'ERROR', message, originalCode: '57014', originalMessage: message };
}

/** The worker's answer to a statement the main thread withdrew: nobody reads it. */
export const WITHDRAWN_MESSAGE = 'The statement was withdrawn before it started';
