import type { RequestContext } from '../context.js';
import { allOk, errors, OperationOutcomeError, toOperationOutcomeError } from '../fhir/outcome.js';
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
 * background. The AsyncJob is a resource of the caller's project, written through the caller's
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
 * noticed at the next progress report (each reads the job). A server that stops mid-job leaves
 * its jobs `active` (the work is lost; operations offered this way are safe to run again).
 */

/**
 * AsyncJobs are written by the server only (src/auth/access.ts, SYSTEM_TYPES), in the caller's
 * project; clients read them through their own repository, with its isolation and policies.
 */
function jobRepository(ctx: RequestContext) {
  return ctx.auth.repo(ctx.identity.projectId);
}

/** Least time between two progress writes of one job. */
export const PROGRESS_INTERVAL_MS = 1_000;

/** Jobs running in this process, by AsyncJob id: $cancel here aborts them at once. */
const running = new Map<string, AbortController>();

const TERMINAL = new Set(['completed', 'error', 'cancelled']);

/** Whether a `Prefer` header asks for an asynchronous answer (`Prefer: respond-async`, RFC 7240). */
export function prefersAsync(prefer: string | undefined): boolean {
  return (prefer ?? '').split(/[,;]/).some((token) => token.trim().toLowerCase() === 'respond-async');
}

/**
 * Creates the AsyncJob (`accepted`) for `operation` called with `input` and starts the handler in
 * the background; returns the job's id. `requestUrl` is the request as the client sent it.
 */
export async function startAsyncJob(operation: Operation, input: OperationInput, request: OperationRequest, requestUrl: string): Promise<string> {
  const created = await jobRepository(request.ctx).createResource('AsyncJob', {
    resourceType: 'AsyncJob',
    status: 'accepted',
    requestTime: new Date().toISOString(),
    request: requestUrl,
  });
  const job = new JobRun(request.ctx, created.resource as AsyncJob, operation);
  running.set(job.id, job.controller);
  setImmediate(() => void job.run(input, request));
  return job.id;
}

class JobRun implements AsyncJobControl {
  readonly id: string;
  readonly controller = new AbortController();
  private lastWrite = Date.now();
  /** The job as last read or written (its versionId is the one writes expect). */
  private stored: AsyncJob;
  /** The job was deleted: nothing more is written. */
  private gone = false;

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
   * again and retries. A job found cancelled stays cancelled (and its handler is told to stop).
   */
  private async save(changes: Partial<AsyncJob>): Promise<void> {
    for (let attempt = 0; attempt < 5 && !this.gone; attempt++) {
      const next: AsyncJob = { ...this.stored, ...changes };
      // A job found cancelled (or stopped) keeps that status: only the output and the time are added.
      if (TERMINAL.has(this.stored.status ?? '')) next.status = this.stored.status;
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

  /** Takes the stored job as the one to write over; a cancelled one stops the handler. */
  private adopt(current: AsyncJob): void {
    this.stored = current;
    if (current.status === 'cancelled') this.controller.abort();
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
        await jobRepository(ctx).updateResource('AsyncJob', id!, { ...job, status: 'cancelled' }, { ifMatch: job.meta?.versionId });
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
