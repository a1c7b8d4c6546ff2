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
  query: async <R>(sql: string) => (await pglite.query<R>(sql)).rows,
  exec: async (sql: string) => {
    await pglite.exec(sql);
  },
});
statistics.start();
let nextTransaction = 1;

async function handle(request: WorkerRequest): Promise<unknown> {
  switch (request.op) {
    case 'query':
      return queryable(request.tx).queryRaw(request.query as SqlQuery);
    case 'execute':
      statistics.noteWrite();
      return queryable(request.tx).executeRaw(request.query as SqlQuery);
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
    return { name: error.name, message: error.message, cause: cause && typeof cause === 'object' ? { ...cause } : undefined };
  }
  return { name: 'Error', message: String(error) };
}
