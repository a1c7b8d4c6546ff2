import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Database } from '../../db/database.js';
import type { Services } from '../context.js';
import { listOperations } from '../registry.js';
import { claimJob } from './queue.js';
import { JobRun, type ContextFactory } from './run.js';

/**
 * The job worker of one server (docs/jobs.md): polls the job table every JOB_POLL_MS, and at once
 * when a job is queued in this process, claiming jobs while fewer than JOB_CONCURRENCY run here.
 */
export interface JobWorker {
  /** Looks for work now (a job was just queued). */
  wake(): void;
  /** Stops this server's run of job `id` at once (it was cancelled); false when it does not run here. */
  abort(id: string): boolean;
  /** Stops claiming; the jobs running here go back to the queue for any server to resume. */
  close(): Promise<void>;
}

/** The workers of this process (tests run several servers in one), by the database of their server. */
const workers = new Map<Database, JobWorker>();

/** Tells the worker of the server whose database is `db` that a job was queued: it claims it without waiting for its next poll. */
export function jobQueued(db: Database): void {
  workers.get(db)?.wake();
}

/** Stops a run of job `id` in this process, if one runs here (a cancellation). */
export function abortLocalJob(id: string): void {
  for (const worker of workers.values()) worker.abort(id);
}

export function startJobWorker(services: Services, contextFor: ContextFactory): JobWorker {
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  const { pollMs, concurrency, queue } = services.config.jobs;
  const running = new Map<string, JobRun>();
  let closed = false;
  let polling: Promise<void> | undefined;
  let again = false;

  const claimWhileRoom = async (): Promise<void> => {
    while (!closed && running.size < concurrency) {
      const known = [...new Set(listOperations().map((operation) => operation.definition.code))];
      const job = await claimJob(services.db, queue, owner, services.config.asyncJobStaleMs, known);
      if (!job) return;
      const run = new JobRun(services, job, owner, contextFor);
      running.set(job.id, run);
      void run.run().finally(() => {
        running.delete(job.id);
        worker.wake();
      });
    }
  };

  const poll = (): void => {
    if (closed) return;
    if (polling) {
      again = true;
      return;
    }
    polling = claimWhileRoom()
      .catch((error: unknown) => services.log.warn({ err: error }, 'job queue: polling failed'))
      .finally(() => {
        polling = undefined;
        if (again) {
          again = false;
          poll();
        }
      });
  };

  const timer = setInterval(poll, pollMs);
  timer.unref();
  const worker: JobWorker = {
    wake: poll,
    abort(id) {
      const run = running.get(id);
      run?.controller.abort();
      return run !== undefined;
    },
    async close() {
      closed = true;
      clearInterval(timer);
      workers.delete(services.db);
      await polling;
      await Promise.all([...running.values()].map((run) => run.handBack()));
    },
  };
  workers.set(services.db, worker);
  poll();
  return worker;
}
