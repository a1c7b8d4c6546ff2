/**
 * Runs the embedded database (PGlite, PostgreSQL compiled to WebAssembly) on a worker thread so
 * that its query execution runs in parallel with HTTP, validation and indexing on the main thread.
 * The main thread talks to it through `WorkerSqlAdapter` (worker-adapter.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { IsolationLevel, SqlDriverAdapter, SqlQuery, Transaction, TransactionOptions } from '@prisma/driver-adapter-utils';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { openPGlite } from './pglite.js';
import { ConnectionQueue, StatementDropped } from './connection-queue.js';
import { PlanStatistics } from './plan-statistics.js';
import { statementTimeoutCause, WITHDRAWN_MESSAGE, type WorkerRequest, type WorkerResponse } from './worker-protocol.js';

const port = parentPort!;
const { dataDir, waitStates } = workerData as { dataDir: string; waitStates: SharedArrayBuffer };
const connection = new ConnectionQueue(new Int32Array(waitStates));
const pglite = await openPGlite(dataDir);
// pglite-prisma-adapter is typed against an older driver-adapter-utils; same interface at run time.
const adapter = (await new PrismaPGlite(pglite).connect()) as unknown as SqlDriverAdapter;
const transactions = new Map<number, Transaction>();
// PGlite has no autovacuum: planner statistics are kept up to date here (plan-statistics.ts).
// Its statements take their turn of the connection like the others, one at a time.
const statistics = new PlanStatistics({
  query: <R>(sql: string, args?: readonly unknown[]) => connection.run(async () => (await pglite.query<R>(sql, args ? [...args] : undefined)).rows),
  exec: (sql: string) =>
    connection.run(async () => {
      await pglite.exec(sql);
    }),
});
statistics.start();
let nextTransaction = 1;

async function handle(request: WorkerRequest): Promise<unknown> {
  switch (request.op) {
    case 'query':
    case 'execute': {
      const { tx, slot, deadline } = request;
      const query = withByteArgs(request.query as SqlQuery);
      const send = (): Promise<unknown> => (request.op === 'query' ? queryable(tx).queryRaw(query) : queryable(tx).executeRaw(query));
      if (request.op === 'execute') statistics.noteWrite();
      // A transaction's statements use the connection it holds already.
      return tx === undefined ? connection.run(send, slot, deadline) : send();
    }
    case 'script':
      return connection.run(() => adapter.executeScript(request.script));
    case 'begin':
      return begin(request.isolationLevel, request.slot, request.deadline);
    case 'commit':
    case 'rollback': {
      const tx = transactions.get(request.tx);
      transactions.delete(request.tx);
      if (!tx) throw new Error(`Transaction ${request.tx} is not open`);
      try {
        return await (request.op === 'commit' ? tx.commit() : tx.rollback());
      } finally {
        connection.release();
      }
    }
    case 'close':
      await statistics.close();
      await pglite.close();
      return undefined;
  }
}

/** Opens a transaction that holds the connection until its commit or rollback (unless dropped while it waits for it). */
async function begin(isolationLevel: IsolationLevel | undefined, slot?: number, deadline?: number): Promise<{ tx: number; options: TransactionOptions }> {
  await connection.takeFor(slot, deadline);
  let tx: Transaction;
  try {
    tx = await adapter.startTransaction(isolationLevel);
  } catch (error) {
    connection.release();
    throw error;
  }
  const id = nextTransaction++;
  transactions.set(id, tx);
  return { tx: id, options: tx.options };
}

/**
 * The generated Prisma client sends a `Bytes` value as base64 text (argument type `bytes`), which
 * @prisma/adapter-pg decodes and pglite-prisma-adapter 0.6 passes on as text, which PGlite then
 * refuses as bytea input. Decoded here; the store's own statements send Uint8Array, untouched.
 */
function withByteArgs(query: SqlQuery): SqlQuery {
  const { args, argTypes } = query;
  let mapped: unknown[] | undefined;
  for (let i = 0; i < argTypes.length; i++) {
    if (argTypes[i]?.scalarType !== 'bytes') continue;
    const arg = args[i];
    if (typeof arg === 'string') (mapped ??= [...args])[i] = Buffer.from(arg, 'base64');
    else if (Array.isArray(arg) && argTypes[i].arity === 'list') {
      (mapped ??= [...args])[i] = arg.map((item: unknown) => (typeof item === 'string' ? Buffer.from(item, 'base64') : item));
    }
  }
  return mapped ? { ...query, args: mapped } : query;
}

function queryable(tx: number | undefined) {
  if (tx === undefined) return adapter;
  const transaction = transactions.get(tx);
  if (!transaction) throw new Error(`Transaction ${tx} is not open`);
  return transaction;
}

port.on('message', (request: WorkerRequest) => {
  handle(request).then(
    (value) => port.postMessage({ id: request.id, ok: true, value } satisfies WorkerResponse),
    (error: unknown) => port.postMessage({ id: request.id, ok: false, error: serializeError(error) } satisfies WorkerResponse),
  );
});
port.postMessage({ id: 0, ok: true, value: 'ready' } satisfies WorkerResponse);

function serializeError(error: unknown): { name: string; message: string; cause?: unknown } {
  if (error instanceof StatementDropped) {
    // Past its deadline: answered as PostgreSQL answers a statement its statement_timeout stopped.
    if (error.timedOut) return { name: 'DriverAdapterError', message: error.message, cause: statementTimeoutCause() };
    return { name: 'Error', message: WITHDRAWN_MESSAGE };
  }
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return { name: error.name, message: error.message, cause: cause && typeof cause === 'object' ? withErrorKind({ ...cause }) : undefined };
  }
  return { name: 'Error', message: String(error) };
}

/**
 * pglite-prisma-adapter 0.6 reports every database error as kind "postgres"; @prisma/adapter-pg
 * names constraint violations, and the generated client turns only those into its known errors
 * (P2002 for a unique key taken, ...). Named here as adapter-pg names them, SQLSTATE kept.
 */
function withErrorKind(cause: Record<string, unknown>): Record<string, unknown> {
  if (cause.kind !== 'postgres' || typeof cause.code !== 'string') return cause;
  const fields = typeof cause.detail === 'string' ? /Key \(([^)]+)\)/.exec(cause.detail)?.[1]?.split(', ') : undefined;
  const constraint = fields ? { fields } : undefined;
  const kind = ERROR_KINDS[cause.code];
  if (!kind) return cause;
  return { ...cause, kind, ...(kind === 'TransactionWriteConflict' ? {} : { constraint }), originalCode: cause.code, originalMessage: cause.message };
}

const ERROR_KINDS: Record<string, string> = {
  '23505': 'UniqueConstraintViolation',
  '23502': 'NullConstraintViolation',
  '23503': 'ForeignKeyConstraintViolation',
  '40001': 'TransactionWriteConflict',
};
