import type { Database } from '../db/database.js';
import type { RequestContext, Services } from '../operations/context.js';
import { allOk, errors, issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { AsyncJob, Parameters } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import { ownOperationDefinition } from '../operations/definition.js';
import { TERMINAL_STATUSES } from '../operations/jobs/async-job-record.js';
import { abortLocalJob } from '../operations/jobs/worker.js';
import type { Operation } from '../operations/registry.js';

/**
 * AsyncJob administration: `AsyncJob/$cancel`, and the sweep of AsyncJobs no queued job stands
 * for. Jobs of the queue (src/operations/jobs, docs/jobs.md) are resumed by another server when
 * theirs stops; an AsyncJob written otherwise (by a server from before the queue, or a test) that
 * is still accepted or active once its lease (extension LEASE_URL, valueInstant) or, without one,
 * its last write is ASYNC_JOB_STALE_MS old, has lost its server: any server, at start and every
 * half of that time, makes it `error` with an OperationOutcome saying so. Writes are conditional
 * on the version read, so a job written meanwhile wins.
 */

/**
 * AsyncJobs are written by the server only (src/access/guarded-repository.ts, SYSTEM_TYPES), in the caller's
 * project; clients read them through their own repository, with its isolation and policies.
 */
function jobRepository(ctx: RequestContext) {
  return ctx.auth.repo(ctx.identity.projectId);
}

/** The extension holding an AsyncJob's lease (valueInstant) where no queued job stands for it. */
export const LEASE_URL = 'https://flint.dev/fhir/StructureDefinition/async-job-lease';

/** `job` without a lease (nor an empty extension list): it has stopped. */
function withoutLease(job: AsyncJob): AsyncJob {
  const others = (job.extension ?? []).filter((extension) => extension?.url !== LEASE_URL);
  const { extension: _previous, ...rest } = job;
  return others.length > 0 ? { ...rest, extension: others } : rest;
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
    `SELECT id, "projectId" FROM resource r WHERE "resourceType" = 'AsyncJob' AND NOT deleted AND content->>'status' IN ('accepted', 'active')
       AND NOT EXISTS (SELECT 1 FROM job WHERE job.id = r.id AND job.status <> 'done')`,
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
      const ended = withoutLease({ ...job, status: 'error', transactionTime: new Date(now).toISOString(), output });
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

/**
 * `POST /AsyncJob/{id}/$cancel` (SPEC 4.9; super admins and project admins, for the jobs they can
 * read): an `accepted` or `active` job becomes `cancelled` at once; the running handler (on this
 * server or another) stops at its next safe point and records what it did. A job that has already
 * stopped is 400.
 */
export const asyncJobCancelOperation: Operation<Record<string, never>, { return: Resource }> = {
  definition: ownOperationDefinition('AsyncJob-cancel.json'),
  access: 'project-admin',
  async handler(_input, { ctx, id }) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const job = (await ctx.repo.readResource('AsyncJob', id!)) as AsyncJob;
      if (TERMINAL_STATUSES.has(job.status ?? '')) {
        throw errors.invalid(`AsyncJob/${id} is ${job.status}: only an accepted or active job can be cancelled`);
      }
      try {
        const cancelled = withoutLease({ ...job, status: 'cancelled' });
        await jobRepository(ctx).updateResource('AsyncJob', id!, cancelled, { ifMatch: job.meta?.versionId });
      } catch (error) {
        // The job recorded progress meanwhile: read it again.
        if (error instanceof OperationOutcomeError && error.status === 412) continue;
        throw error;
      }
      abortLocalJob(id!);
      return { return: allOk(`AsyncJob/${id} cancelled`) };
    }
    throw errors.conflict(`AsyncJob/${id} kept changing: try again`);
  },
};
