/**
 * Runs the embedded database (PGlite, PostgreSQL compiled to WebAssembly) on a worker thread so
 * that its query execution runs in parallel with HTTP, validation and indexing on the main thread.
 * The main thread talks to it through `WorkerSqlAdapter` (worker-adapter.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { SqlDriverAdapter, SqlQuery, Transaction } from '@prisma/driver-adapter-utils';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { openPGlite } from './pglite.js';
import { PlanStatistics } from './plan-statistics.js';
import type { WorkerRequest, WorkerResponse } from './worker-protocol.js';

const port = parentPort!;
const { dataDir } = workerData as { dataDir: string };
const pglite = await openPGlite(dataDir);
// pglite-prisma-adapter is typed against an older driver-adapter-utils; same interface at run time.
const adapter = (await new PrismaPGlite(pglite).connect()) as unknown as SqlDriverAdapter;
const transactions = new Map<number, Transaction>();
// PGlite has no autovacuum: planner statistics are kept up to date here (plan-statistics.ts).
const statistics = new PlanStatistics({
  query: async <R>(sql: string, args?: readonly unknown[]) => (await pglite.query<R>(sql, args ? [...args] : undefined)).rows,
  exec: async (sql: string) => {
    await pglite.exec(sql);
  },
});
statistics.start();
let nextTransaction = 1;

async function handle(request: WorkerRequest): Promise<unknown> {
  switch (request.op) {
    case 'query':
      return queryable(request.tx).queryRaw(withByteArgs(request.query as SqlQuery));
    case 'execute':
      statistics.noteWrite();
      return queryable(request.tx).executeRaw(withByteArgs(request.query as SqlQuery));
    case 'script':
      return adapter.executeScript(request.script);
    case 'begin': {
      const tx = await adapter.startTransaction(request.isolationLevel);
      const id = nextTransaction++;
      transactions.set(id, tx);
      return { tx: id, options: tx.options };
    }
    case 'commit':
    case 'rollback': {
      const tx = transactions.get(request.tx);
      transactions.delete(request.tx);
      if (!tx) throw new Error(`Transaction ${request.tx} is not open`);
      return request.op === 'commit' ? tx.commit() : tx.rollback();
    }
    case 'close':
      await statistics.close();
      await pglite.close();
      return undefined;
  }
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
