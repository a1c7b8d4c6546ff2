import type { Database } from '../db/database.js';
import type { RequestContext, Services } from '../operations/context.js';
import { allOk, errors, issue, OperationOutcomeError, outcome, toOperationOutcomeError } from '../fhir/outcome.js';
import type { AsyncJob, Parameters } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import { ownOperationDefinition } from '../operations/definition.js';
import { invokeOperation } from '../operations/execute.js';
import { encodeOutput, type OperationInput } from '../operations/parameters.js';
import type { AsyncJobControl, Operation, OperationRequest } from '../operations/registry.js';

/**
 * Asynchronous operations (http://hl7.org/fhir/R4/async.html, as Medplum does it): an operation
 * with `respondsAsync` called with `Prefer: respond-async` is answered 202 at once with
 * `Content-Location: <fhir base>/AsyncJob/<id>`, and its handler runs in this server process in the
 * background (GraphQL's `<Field>Async` fields start the same job and answer it: acceptAsyncJob).
 * The AsyncJob is a resource of the caller's project, written through the caller's
 * repository, so it is read (and polled) like any other:
 *
 *   accepted ──▶ active ──▶ completed   (output: the operation's Parameters)
 *                   │  └───▶ error       (output: `outcome`, an OperationOutcome)
 *                   └──────▶ cancelled   (AsyncJob/$cancel; output: what was done until it stopped)
 *
 * While active, `output` holds the handler's progress (its output so far), written at most once a
 * second. `transactionTime` is set when the job stops. Every write of the job is conditional on
 * the version last seen (If-Match), so a cancellation is never overwritten: a job that finds itself
 * cancelled stops at its handler's next safe point. A cancellation through another server is
 * noticed at the next progress report (each reads the job).
 *
 * A server that stops mid-job (killed, crashed, its host lost) cannot record it: the work is lost
 * (operations offered this way are safe to run again), and the job must not stay `active` forever.
 * So a job holds a lease (extension LEASE_URL, valueInstant: until when its server vouches for it),
 * ASYNC_JOB_STALE_MS ahead; the server running it renews it with every write, and at least every
 * quarter of that time (a heartbeat). Any server, at start and every half of that time
 * (watchAsyncJobs), fails the accepted or active jobs whose lease has passed: `error`, with an
 * OperationOutcome saying the server stopped before the job finished. Several servers share one
 * database: a live job's lease never passes, so no server fails another's running job; the lease
 * is the owner's own setting, so servers configured differently still agree. The write is
 * conditional on the version read, so a lease renewed meanwhile wins; and a server whose job was
 * failed all the same (its heartbeat held up for longer than the lease) stops the job and writes
 * nothing more. A job without a lease (written before leases existed) is judged by its
 * lastUpdated and the sweeping server's ASYNC_JOB_STALE_MS.
 */

/**
 * AsyncJobs are written by the server only (src/access/guarded-repository.ts, SYSTEM_TYPES), in the caller's
 * project; clients read them through their own repository, with its isolation and policies.
 */
function jobRepository(ctx: RequestContext) {
  return ctx.auth.repo(ctx.identity.projectId);
}

/** Least time between two progress writes of one job. */
export const PROGRESS_INTERVAL_MS = 1_000;

/** The extension holding a running job's lease (valueInstant): past it, the job is failed. */
export const LEASE_URL = 'https://flint.dev/fhir/StructureDefinition/async-job-lease';

/** Jobs running in this process, by AsyncJob id: $cancel here aborts them at once. */
const running = new Map<string, AbortController>();

const TERMINAL = new Set(['completed', 'error', 'cancelled']);

/** Whether a `Prefer` header asks for an asynchronous answer (`Prefer: respond-async`, RFC 7240). */
export function prefersAsync(prefer: string | undefined): boolean {
  return (prefer ?? '').split(/[,;]/).some((token) => token.trim().toLowerCase() === 'respond-async');
}

/**
 * The asynchronous form of an operation call, for every transport (REST's `Prefer: respond-async`,
 * GraphQL's `<Field>Async`), once the caller is authorized and the input decoded: checks the input
 * (a client's mistake is the answer, not a failed job), then creates the AsyncJob and starts the
 * handler (startAsyncJob). Returns the job as created (`accepted`).
 */
export async function acceptAsyncJob(operation: Operation, input: OperationInput, request: OperationRequest, requestUrl: string): Promise<AsyncJob> {
  await operation.check?.(input, request);
  return startAsyncJob(operation, input, request, requestUrl);
}

/**
 * Creates the AsyncJob (`accepted`) for `operation` called with `input` and starts the handler in
 * the background; returns the job as created. `requestUrl` is the request as the client sent it.
 */
async function startAsyncJob(operation: Operation, input: OperationInput, request: OperationRequest, requestUrl: string): Promise<AsyncJob> {
  const now = Date.now();
  const created = await jobRepository(request.ctx).createResource('AsyncJob', {
    resourceType: 'AsyncJob',
    extension: [lease(now + request.ctx.config.asyncJobStaleMs)],
    status: 'accepted',
    requestTime: new Date(now).toISOString(),
    request: requestUrl,
  });
  const job = new JobRun(request.ctx, created.resource as AsyncJob, operation);
  running.set(job.id, job.controller);
  setImmediate(() => void job.run(input, request));
  return created.resource as AsyncJob;
}

class JobRun implements AsyncJobControl {
  readonly id: string;
  readonly controller = new AbortController();
  private lastWrite = Date.now();
  /** The job as last read or written (its versionId is the one writes expect). */
  private stored: AsyncJob;
  /** The job was deleted, or stopped by someone else (failed by a sweep): nothing more is written. */
  private gone = false;
  /** Writes of the job, one at a time (the heartbeat writes beside the handler's progress). */
  private writes: Promise<unknown> = Promise.resolve();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: RequestContext,
    job: AsyncJob,
    private readonly operation: Operation,
  ) {
    this.id = job.id!;
    this.stored = job;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async run(input: OperationInput, request: OperationRequest): Promise<void> {
    const every = this.ctx.config.asyncJobStaleMs / 4;
    this.heartbeat = setInterval(() => {
      // A stopped job (cancelled meanwhile) needs no lease; a recent write renewed it.
      if (this.gone || TERMINAL.has(this.stored.status ?? '') || Date.now() - this.lastWrite < every - 50) return;
      this.save({}).catch((error: unknown) => this.ctx.log.warn({ err: error, asyncJob: this.id }, 'asynchronous job: heartbeat not recorded'));
    }, every);
    this.heartbeat.unref();
    try {
      await this.save({ status: 'active' });
      if (this.signal.aborted) return await this.finish(undefined);
      const result = await invokeOperation(this.operation, input, { ...request, job: this });
      await this.finish(asParameters(result.resource));
    } catch (error) {
      const failure = toOperationOutcomeError(error);
      if (failure.status >= 500) this.ctx.log.error({ err: error, asyncJob: this.id }, 'asynchronous job failed');
      await this.finish({ resourceType: 'Parameters', parameter: [{ name: 'outcome', resource: failure.outcome }] }, 'error').catch((cause: unknown) =>
        this.ctx.log.error({ err: cause, asyncJob: this.id }, 'asynchronous job: the failure could not be recorded'),
      );
    } finally {
      clearInterval(this.heartbeat);
      running.delete(this.id);
    }
  }

  async progress(output: unknown): Promise<void> {
    if (!this.signal.aborted && !this.gone) {
      // A cancellation through another server is only in the database.
      const current = await this.read();
      if (current) this.adopt(current);
    }
    if (this.signal.aborted || this.gone || Date.now() - this.lastWrite < PROGRESS_INTERVAL_MS) return;
    await this.save({ output: asParameters(encodeOutput(this.operation.definition, output)) });
  }

  /** The final write: `completed` (or `error`), or `cancelled` when the job was cancelled meanwhile. */
  private async finish(output: Parameters | undefined, status: 'completed' | 'error' = 'completed'): Promise<void> {
    await this.save({ status, transactionTime: new Date().toISOString(), ...(output ? { output } : {}) });
  }

  /**
   * Writes `changes` over the job as last seen, conditionally on its version; on a conflict reads it
   * again and retries. A job found cancelled stays cancelled (and its handler is told to stop). Every
   * write renews the lease, or drops it when the job stops. Writes are queued: one at a time.
   */
  private save(changes: Partial<AsyncJob>): Promise<void> {
    const write = this.writes.then(() => this.write(changes));
    this.writes = write.catch(() => undefined);
    return write;
  }

  private async write(changes: Partial<AsyncJob>): Promise<void> {
    for (let attempt = 0; attempt < 5 && !this.gone; attempt++) {
      const changed: AsyncJob = { ...this.stored, ...changes };
      // A job found cancelled (or stopped) keeps that status: only the output and the time are added.
      if (TERMINAL.has(this.stored.status ?? '')) changed.status = this.stored.status;
      const stopping = TERMINAL.has(changed.status ?? '');
      const next = withLease(changed, stopping ? undefined : Date.now() + this.ctx.config.asyncJobStaleMs);
      try {
        const written = await jobRepository(this.ctx).updateResource('AsyncJob', this.id, next, { ifMatch: this.stored.meta?.versionId });
        this.stored = written.resource as AsyncJob;
        this.lastWrite = Date.now();
        return;
      } catch (error) {
        if (!(error instanceof OperationOutcomeError) || error.status !== 412) throw error;
        const current = await this.read();
        if (!current) return;
        this.adopt(current);
      }
    }
    if (!this.gone) throw new Error(`AsyncJob/${this.id} kept changing while the job tried to record its state`);
  }

  /**
   * Takes the stored job as the one to write over; a cancelled one stops the handler. One that
   * someone else ended otherwise (failed by a sweep: this server's heartbeat came too late) stops it
   * too, and is left as it is.
   */
  private adopt(current: AsyncJob): void {
    this.stored = current;
    if (current.status === 'cancelled') this.controller.abort();
    if (current.status === 'error' || current.status === 'completed') {
      this.gone = true;
      this.controller.abort();
    }
  }

  /** The stored job, or undefined (and no more writes) when it was deleted. */
  private async read(): Promise<AsyncJob | undefined> {
    try {
      return (await jobRepository(this.ctx).readResource('AsyncJob', this.id)) as AsyncJob;
    } catch (error) {
      if (error instanceof OperationOutcomeError && (error.status === 404 || error.status === 410)) {
        this.gone = true;
        this.controller.abort();
        return undefined;
      }
      throw error;
    }
  }
}

type Extension = NonNullable<AsyncJob['extension']>[number];

function lease(until: number): Extension {
  return { url: LEASE_URL, valueInstant: new Date(until).toISOString() };
}

/** `job` with its lease set to `until`, or without one (nor an empty extension list) when `until` is undefined. */
function withLease(job: AsyncJob, until: number | undefined): AsyncJob {
  const others = (job.extension ?? []).filter((extension) => extension?.url !== LEASE_URL);
  const extension = until === undefined ? others : [...others, lease(until)];
  const { extension: _previous, ...rest } = job;
  return extension.length > 0 ? { ...rest, extension } : rest;
}

/** The time a job's lease ends (ms), or undefined when it has none (written before leases). */
function leaseEnd(job: AsyncJob): number | undefined {
  const value = job.extension?.find((extension) => extension?.url === LEASE_URL)?.valueInstant;
  const time = value ? Date.parse(value) : Number.NaN;
  return Number.isNaN(time) ? undefined : time;
}

/** Whether an accepted or active job has lost its server: its lease (or, without one, its last write) is past. */
function isAbandoned(job: AsyncJob, now: number, staleMs: number): boolean {
  if (job.status !== 'accepted' && job.status !== 'active') return false;
  const end = leaseEnd(job) ?? Date.parse(job.meta?.lastUpdated ?? '') + staleMs;
  return end < now;
}

export interface AsyncJobWatch {
  /** Fails the abandoned jobs now; resolves to how many it failed. */
  sweep(): Promise<number>;
  /** Stops sweeping (waits for a sweep under way). */
  close(): Promise<void>;
}

/**
 * Recovery of jobs whose server stopped (see the top of this file): sweeps once before resolving (a
 * failed sweep is logged, never fatal), then every half of ASYNC_JOB_STALE_MS until closed.
 */
export async function watchAsyncJobs(services: Services): Promise<AsyncJobWatch> {
  let current: Promise<number> | undefined;
  const sweep = (): Promise<number> =>
    (current ??= sweepAbandonedJobs(services)
      .catch((error: unknown) => {
        services.log.error({ err: error }, 'AsyncJob sweep failed');
        return 0;
      })
      .finally(() => (current = undefined)));
  await sweep();
  const timer = setInterval(() => void sweep(), services.config.asyncJobStaleMs / 2);
  timer.unref();
  return {
    sweep,
    async close() {
      clearInterval(timer);
      await current;
    },
  };
}

/**
 * Jobs not finished yet, by status (`accepted`, `active`), in every project: the depth of the job
 * queue, for the metrics. One scan of the AsyncJob rows, as the sweep below.
 */
export async function countUnfinishedJobs(db: Database): Promise<Record<string, number>> {
  const rows = await db.query<{ status: string; n: number }>(
    `SELECT content->>'status' AS status, count(*)::int AS n FROM resource WHERE "resourceType" = 'AsyncJob' AND NOT deleted AND content->>'status' IN ('accepted', 'active') GROUP BY 1`,
  );
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
}

/**
 * Marks `error` every accepted or active job, in any project, that no server vouches for any more.
 * The candidates come from one scan of the AsyncJob rows (few: jobs are rare, and the primary key
 * starts with the type); each is then read and written through its project's repository,
 * conditionally on the version read, so a job renewed (or cancelled) meanwhile is left alone.
 */
async function sweepAbandonedJobs(services: Services): Promise<number> {
  const staleMs = services.config.asyncJobStaleMs;
  const rows = await services.db.query<{ id: string; projectId: string }>(
    `SELECT id, "projectId" FROM resource WHERE "resourceType" = 'AsyncJob' AND NOT deleted AND content->>'status' IN ('accepted', 'active')`,
  );
  let failed = 0;
  for (const row of rows) {
    const repo = services.auth.repo(row.projectId);
    try {
      const job = (await repo.readResource('AsyncJob', row.id)) as AsyncJob;
      const now = Date.now();
      if (!isAbandoned(job, now, staleMs)) continue;
      const since = job.meta?.lastUpdated ?? job.requestTime;
      const text =
        `The server running this job stopped before it finished (last heard from at ${since}): ` +
        'its work is lost; run the operation again';
      const output: Parameters = {
        resourceType: 'Parameters',
        // What the job had reported so far, then why it stopped.
        parameter: [...((job.output as Parameters | undefined)?.parameter ?? []), { name: 'outcome', resource: outcome([issue('transient', text)]) }],
      };
      const ended = withLease({ ...job, status: 'error', transactionTime: new Date(now).toISOString(), output }, undefined);
      await repo.updateResource('AsyncJob', row.id, ended, { ifMatch: job.meta?.versionId });
      services.log.warn({ asyncJob: row.id, projectId: row.projectId, lastHeard: since }, 'AsyncJob failed: its server stopped before it finished');
      failed++;
    } catch (error) {
      // Written (412), deleted or gone (404, 410) meanwhile: no longer this sweep's business.
      if (error instanceof OperationOutcomeError && [404, 410, 412].includes(error.status)) continue;
      throw error;
    }
  }
  return failed;
}

/** AsyncJob.output is a Parameters: an operation answering with a resource has it as `return`. */
function asParameters(resource: Resource): Parameters {
  return resource.resourceType === 'Parameters' ? (resource as Parameters) : { resourceType: 'Parameters', parameter: [{ name: 'return', resource }] };
}

/**
 * `POST /AsyncJob/{id}/$cancel` (SPEC 4.9; super admins and project admins, for the jobs they can
 * read): an `accepted` or `active` job becomes `cancelled` at once; the running handler (on this
 * server or another) stops at its next safe point and records what it did. A job that has already
 * stopped is 400.
 */
export const asyncJobCancelOperation: Operation<Record<string, never>, { return: Resource }> = {
  definition: ownOperationDefinition('AsyncJob-cancel.json'),
  authorize({ ctx }) {
    if (!ctx.identity.superAdmin && !ctx.identity.projectAdmin) throw errors.forbidden('Only a super admin or a project admin can cancel an AsyncJob');
  },
  async handler(_input, { ctx, id }) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const job = (await ctx.repo.readResource('AsyncJob', id!)) as AsyncJob;
      if (TERMINAL.has(job.status ?? '')) {
        throw errors.invalid(`AsyncJob/${id} is ${job.status}: only an accepted or active job can be cancelled`);
      }
      try {
        const cancelled = withLease({ ...job, status: 'cancelled' }, undefined);
        await jobRepository(ctx).updateResource('AsyncJob', id!, cancelled, { ifMatch: job.meta?.versionId });
      } catch (error) {
        // The job recorded progress meanwhile: read it again.
        if (error instanceof OperationOutcomeError && error.status === 412) continue;
        throw error;
      }
      running.get(id!)?.abort();
      return { return: allOk(`AsyncJob/${id} cancelled`) };
    }
    throw errors.conflict(`AsyncJob/${id} kept changing: try again`);
  },
};
