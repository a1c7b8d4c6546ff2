import pg from 'pg';
import { errors } from '../fhir/outcome.js';

/**
 * The answer of a request whose client closed its connection while a statement of it ran (or
 * before the next one): nobody reads it; its log line and metrics say 499, the status proxies use
 * for a request the client closed, never a 500.
 */
export function clientClosed(): Error {
  return errors.clientClosed('The client closed its connection; the request was stopped.');
}

/**
 * Hands a signal to the one statement that a synchronous call sends: the Prisma adapter sends its
 * statement within its queryRaw, synchronously, and has no way to pass a signal along.
 */
export class SignalHandoff {
  /** The signal of the statement being sent now (set and taken within one synchronous call). */
  private signal: AbortSignal | undefined;

  /** Runs `send` (which sends one statement, synchronously) with `signal` for that statement. */
  sendWith<T>(signal: AbortSignal, send: () => Promise<T>): Promise<T> {
    if (signal.aborted) return Promise.reject(clientClosed());
    this.signal = signal;
    try {
      return send();
    } finally {
      this.signal = undefined;
    }
  }

  /** The signal for the statement being sent now, if any; the next statement gets none. */
  take(): AbortSignal | undefined {
    const signal = this.signal;
    this.signal = undefined;
    return signal;
  }

  get pending(): boolean {
    return this.signal !== undefined;
  }
}

/**
 * A pool whose statements can be cancelled when a request's client goes away
 * (docs/overload.md "Abandoned"). A statement sent with a signal takes a connection of its own
 * from the pool (as pool.query does inside), and when the signal aborts, PostgreSQL is sent a
 * cancel request for that connection's backend: a protocol message on a new socket, which needs
 * no connection of the pool (it works when the pool is exhausted) and no authentication. The
 * connection goes back to the pool once the cancel request has been handled, so the cancel
 * cannot reach a statement of the connection's next user.
 *
 * The Prisma adapter sends its statements with `pool.query`, synchronously within its queryRaw:
 * `sendWith` hands the signal to that one call.
 */
export class CancellablePool extends pg.Pool {
  private readonly handoff = new SignalHandoff();

  /** Runs `send` (which calls query() once, synchronously) with `signal` for its statement. */
  sendWith<T>(signal: AbortSignal, send: () => Promise<T>): Promise<T> {
    return this.handoff.sendWith(signal, send);
  }

  // pg's query() is a set of overloads over untyped configs (an untyped boundary): `any` here.
  override query(config: any, ...rest: any[]): any {
    if (!this.handoff.pending || typeof rest[rest.length - 1] === 'function') return (super.query as (...args: unknown[]) => unknown)(config, ...rest);
    return this.cancellableQuery(this.handoff.take()!, config, rest[0]);
  }

  private async cancellableQuery(signal: AbortSignal, config: unknown, values: unknown): Promise<pg.QueryResult> {
    const client = await this.connect();
    let cancelling: Promise<void> | undefined;
    const onAbort = () => (cancelling ??= this.cancel(client));
    let failure: unknown;
    try {
      if (signal.aborted) throw clientClosed();
      signal.addEventListener('abort', onAbort);
      return await queryWithCallback(client, config, values);
    } catch (error) {
      failure = error;
      throw cancelling && isQueryCanceled(error) ? clientClosed() : error;
    } finally {
      signal.removeEventListener('abort', onAbort);
      if (cancelling) await cancelling;
      // A cancelled statement leaves its connection idle and sound; other failures end it, as pool.query does.
      client.release(failure !== undefined && !(cancelling && isQueryCanceled(failure)) && !isClientClosed(failure) ? (failure as Error) : undefined);
    }
  }

  /**
   * Sends PostgreSQL a cancel request for `client`'s backend (as pg's own Client.cancel does, on a
   * connection object of a client that is never started); resolves once the server has closed
   * that socket, by when it has signalled the backend.
   */
  private cancel(client: pg.PoolClient): Promise<void> {
    const canceller = new pg.Client(this.options) as unknown as CancellerInternals;
    const target = client as unknown as { processID: number; secretKey: number };
    const connection = canceller.connection;
    return new Promise<void>((resolve) => {
      connection.stream.once('close', () => resolve());
      connection.on('error', () => resolve());
      connection.on('connect', () => connection.cancel(target.processID, target.secretKey));
      if (canceller.host.startsWith('/')) connection.connect(`${canceller.host}/.s.PGSQL.${canceller.port}`);
      else connection.connect(canceller.port, canceller.host);
    });
  }
}

/**
 * `client.query` in the callback form that pool.query uses: in pg's promise form the rows of
 * every answer outlived the next young-generation collection, which then copied them all to the
 * old generation (measured on a walk of pages: see bench/RESULTS.md).
 */
function queryWithCallback(client: pg.PoolClient, config: unknown, values: unknown): Promise<pg.QueryResult> {
  type Callback = (error: Error | undefined, result: pg.QueryResult) => void;
  return new Promise((resolve, reject) => {
    (client.query as (config: unknown, values: unknown, callback: Callback) => void)(config, values, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

/** The parts of a pg Client that send a cancel request (pg/lib/client.js cancel). */
interface CancellerInternals {
  readonly host: string;
  readonly port: number;
  readonly connection: {
    readonly stream: NodeJS.EventEmitter;
    on(event: 'connect' | 'error', listener: () => void): void;
    connect(portOrPath: number | string, host?: string): void;
    cancel(processID: number, secretKey: number): void;
  };
}

/** PostgreSQL's `query_canceled`, as pg reports it. */
function isQueryCanceled(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '57014';
}

export function isClientClosed(error: unknown): boolean {
  return (error as { status?: unknown } | undefined)?.status === CLIENT_CLOSED_STATUS;
}

export const CLIENT_CLOSED_STATUS = 499;
