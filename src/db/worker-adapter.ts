import { Worker } from 'node:worker_threads';
import {
  DriverAdapterError,
  type IsolationLevel,
  type SqlDriverAdapter,
  type SqlQuery,
  type SqlResultSet,
  type Transaction,
  type TransactionOptions,
} from '@prisma/driver-adapter-utils';
import { clientClosed, SignalHandoff } from './cancellation.js';
import { WaitSlots } from './wait-slots.js';
import { statementTimeoutCause, type WithdrawableCall, type WorkerCall, type WorkerResponse } from './worker-protocol.js';

const ADAPTER_NAME = 'flint-pglite-worker';

interface Waiter {
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** The statement's wait slot, given back when the worker answers. */
  slot?: number;
  /** Stops the statement's timer and abort listener. */
  done?(): void;
}

/**
 * The embedded database on a worker thread, seen through the driver adapter interface Prisma and
 * the resource store use. Every call is a message to the worker; results come back by id.
 *
 * A statement outside a transaction waits on the worker for the one connection
 * (connection-queue.ts). While it waits it can be withdrawn, as PostgreSQL cancels a statement:
 * when the signal it was sent with aborts (its client went away: answered 499) or when
 * `waitBoundMs`, the reads' statement timeout, passes (answered as a statement_timeout, which
 * the Database turns into its 503). Once it has started it runs to its end: PGlite cannot stop it.
 * A transaction's begin waits so too, within the bound its Database gives (startTransactionWithin).
 */
export class WorkerSqlAdapter implements SqlDriverAdapter {
  readonly provider = 'postgres' as const;
  readonly adapterName = ADAPTER_NAME;
  private readonly pending = new Map<number, Waiter>();
  private nextId = 1;
  /** Set once the worker has stopped: every later call fails at once instead of waiting forever. */
  private stopped: Error | undefined;
  private readonly handoff = new SignalHandoff();

  private constructor(
    private readonly worker: Worker,
    private readonly slots: WaitSlots,
    private readonly waitBoundMs: number,
  ) {
    worker.on('message', (response: WorkerResponse) => this.settle(response));
    worker.on('error', (error) => this.stop(error));
    worker.on('exit', (code) => this.stop(new Error(`The database worker has stopped (exit code ${code})`)));
  }

  /** `waitBoundMs`: how long a statement outside a transaction may wait for the connection (0: as long as it takes). */
  static async start(dataDir: string, waitBoundMs = 0): Promise<WorkerSqlAdapter> {
    const slots = new WaitSlots();
    const worker = spawnWorker(new URL(`./pglite-worker${extensionOf(import.meta.url)}`, import.meta.url), { dataDir, waitStates: slots.buffer });
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number): void => fail(new Error(`The database worker exited during start-up (code ${code})`));
      const cleanUp = (): void => {
        worker.off('message', onMessage);
        worker.off('error', fail);
        worker.off('exit', onExit);
      };
      const fail = (error: Error): void => {
        cleanUp();
        reject(error);
      };
      const onMessage = (response: WorkerResponse): void => {
        if (response.id !== 0) return;
        cleanUp();
        if (response.ok) resolve();
        else reject(new Error(response.error.message));
      };
      worker.on('message', onMessage);
      worker.on('error', fail);
      worker.on('exit', onExit);
    });
    return new WorkerSqlAdapter(worker, slots, waitBoundMs);
  }

  /** Runs `send` (which sends one statement, synchronously) with `signal` for that statement. */
  sendWith<T>(signal: AbortSignal, send: () => Promise<T>): Promise<T> {
    return this.handoff.sendWith(signal, send);
  }

  call(request: WorkerCall): Promise<unknown> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...request, id });
    });
  }

  queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return this.callWithdrawable('query', query) as Promise<SqlResultSet>;
  }

  executeRaw(query: SqlQuery): Promise<number> {
    return this.callWithdrawable('execute', query) as Promise<number>;
  }

  /**
   * Sends a statement that may be withdrawn while it waits for the connection: when the signal
   * being sent with it aborts, or when the wait bound passes. Either answers at once; the worker
   * skips the statement when its turn comes.
   */
  private callWithdrawable(op: 'query' | 'execute', query: SqlQuery): Promise<unknown> {
    return this.sendWithdrawable({ op, query }, this.handoff.take(), this.waitBoundMs);
  }

  /**
   * Sends `request`, withdrawn while it waits for the connection when `signal` aborts or
   * `waitBoundMs` (0: none) passes; refused at once under a bound when WAIT_SLOTS statements wait.
   */
  private sendWithdrawable(request: WithdrawableCall, signal: AbortSignal | undefined, waitBoundMs: number): Promise<unknown> {
    if (this.stopped || (!signal && !waitBoundMs)) return this.call(request);
    const slot = this.slots.take();
    // Every slot holds a statement still waiting for the connection: one more would wait behind
    // them all, so under a bound it is answered as timed out at once (overload.md), never queued.
    if (slot === undefined) return waitBoundMs ? Promise.reject(timedOut()) : this.call(request);
    const id = this.nextId++;
    const deadline = waitBoundMs ? Date.now() + waitBoundMs : undefined;
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, slot };
      const withdraw = (error: () => Error) => {
        if (!this.slots.withdraw(slot)) return;
        waiter.done?.();
        // The worker still answers when the statement's turn comes (then the slot is free again).
        waiter.resolve = waiter.reject = () => undefined;
        reject(error());
      };
      const onAbort = () => withdraw(clientClosed);
      const timer = deadline === undefined ? undefined : setTimeout(() => withdraw(timedOut), waitBoundMs);
      signal?.addEventListener('abort', onAbort);
      waiter.done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.pending.set(id, waiter);
      this.worker.postMessage({ ...request, slot, deadline, id });
    });
  }

  async executeScript(script: string): Promise<void> {
    await this.call({ op: 'script', script });
  }

  startTransaction(isolationLevel?: IsolationLevel): Promise<Transaction> {
    return this.startTransactionWithin(0, isolationLevel);
  }

  /**
   * A transaction, once the connection is free, unless `waitBoundMs` (0: none) passes first: then
   * it is withdrawn and answered as a statement_timeout at once. A transaction withdrawn so never
   * started; one that got the connection runs to its commit or rollback, however long it waited.
   */
  async startTransactionWithin(waitBoundMs: number, isolationLevel?: IsolationLevel): Promise<Transaction> {
    const begun = await this.sendWithdrawable({ op: 'begin', isolationLevel }, undefined, waitBoundMs);
    const { tx, options } = begun as { tx: number; options: TransactionOptions };
    return new WorkerTransaction(this, tx, options);
  }

  getConnectionInfo() {
    return { supportsRelationJoins: true };
  }

  /** Closes the database in the worker, then stops the thread. */
  async dispose(): Promise<void> {
    await this.call({ op: 'close' }).catch(() => undefined);
    this.stop(new Error('The database is closed'));
    await this.worker.terminate();
  }

  private settle(response: WorkerResponse): void {
    const waiter = this.pending.get(response.id);
    if (!waiter) return;
    this.pending.delete(response.id);
    if (waiter.slot !== undefined) this.slots.give(waiter.slot);
    waiter.done?.();
    if (response.ok) waiter.resolve(response.value);
    else waiter.reject(rebuildError(response.error));
  }

  private stop(error: Error): void {
    this.stopped ??= error;
    for (const waiter of this.pending.values()) {
      waiter.done?.();
      waiter.reject(error);
    }
    this.pending.clear();
  }
}

class WorkerTransaction implements Transaction {
  readonly provider = 'postgres' as const;
  readonly adapterName = ADAPTER_NAME;

  constructor(
    private readonly adapter: WorkerSqlAdapter,
    private readonly tx: number,
    readonly options: TransactionOptions,
  ) {}

  queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return this.adapter.call({ op: 'query', query, tx: this.tx }) as Promise<SqlResultSet>;
  }

  executeRaw(query: SqlQuery): Promise<number> {
    return this.adapter.call({ op: 'execute', query, tx: this.tx }) as Promise<number>;
  }

  async commit(): Promise<void> {
    await this.adapter.call({ op: 'commit', tx: this.tx });
  }

  async rollback(): Promise<void> {
    await this.adapter.call({ op: 'rollback', tx: this.tx });
  }
}

/** A statement whose wait bound passed before it started, as PostgreSQL's statement_timeout ends one. */
function timedOut(): Error {
  return new DriverAdapterError(statementTimeoutCause() as ConstructorParameters<typeof DriverAdapterError>[0]);
}

/** Database errors keep their driver shape (Prisma and our SQLSTATE checks read `cause`). */
function rebuildError(error: { name: string; message: string; cause?: unknown }): Error {
  if (error.name === 'DriverAdapterError' && error.cause) {
    return new DriverAdapterError(error.cause as ConstructorParameters<typeof DriverAdapterError>[0]);
  }
  return Object.assign(new Error(error.message), { name: error.name });
}

/**
 * Under tsx the worker module is TypeScript too, and Node 20 does not apply `--import tsx` to a
 * worker's entry point: a small script registers tsx's loader in the thread, then imports it.
 */
function spawnWorker(entry: URL, workerData: unknown): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, { workerData });
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

function extensionOf(url: string): string {
  return url.slice(url.lastIndexOf('.'));
}
