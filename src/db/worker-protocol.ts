import type { IsolationLevel, SqlQuery } from '@prisma/driver-adapter-utils';

/** Messages between the main thread and the PGlite worker; `id` pairs a response with its request. */
export type WorkerRequest =
  | { id: number; op: 'query' | 'execute'; query: SqlQuery; tx?: number }
  | { id: number; op: 'script'; script: string }
  | { id: number; op: 'begin'; isolationLevel?: IsolationLevel }
  | { id: number; op: 'commit' | 'rollback'; tx: number }
  | { id: number; op: 'close' };

export type WorkerResponse =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string; cause?: unknown } };

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;
export type WorkerCall = DistributiveOmit<WorkerRequest, 'id'>;
