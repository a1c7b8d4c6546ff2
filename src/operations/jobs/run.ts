import { outcome, issue, toOperationOutcomeError } from '../../fhir/outcome.js';
import type { Parameters } from '../../fhir/resources.js';
import type { Identity } from '../../identity/identity.js';
import { resourceScopesOf } from '../../identity/scopes.js';
import { isTransientDatabaseError } from '../../storage/db-errors.js';
import type { RequestContext, Services } from '../context.js';
import { invokeOperation } from '../execute.js';
import { encodeOutput } from '../parameters.js';
import { resolveOperation, type AsyncJobControl, type Operation } from '../registry.js';
import { AsyncJobRecord, asParameters } from './async-job-record.js';
import { endJob, releaseJob, renewLease, retryJobLater, saveCheckpoint, type ClaimedJob } from './queue.js';

/** What the composition root supplies: a request context for a job's caller (src/access is a higher layer). */
export type ContextFactory = (identity: Identity, requestId: string) => RequestContext;

/** Longest wait before a retry, whatever the number of attempts. */
const MAX_RETRY_DELAY_MS = 60_000;

/**
 * One run of a claimed job on this server: the operation's handler with `request.job` set. The
 * lease on the job row is renewed every quarter of ASYNC_JOB_STALE_MS (a heartbeat); a renewal that
 * finds the job no longer this server's (cancelled, or resumed by another server after this one
 * stalled for longer than the lease) stops the handler, and nothing more is written.
 */
export class JobRun implements AsyncJobControl {
  readonly controller = new AbortController();
  readonly record: AsyncJobRecord;
  private lost = false;

  constructor(
    private readonly services: Services,
    private readonly job: ClaimedJob,
    private readonly owner: string,
    private readonly contextFor: ContextFactory,
  ) {
    this.record = new AsyncJobRecord(job.id, services.auth.repo(job.projectId), services.log, () => this.controller.abort());
  }

  get id(): string {
    return this.job.id;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get resumeFrom(): unknown {
    return this.job.checkpoint;
  }

  async progress(output: unknown): Promise<void> {
    await this.record.refresh();
    if (this.signal.aborted) return;
    await this.record.progress(asParameters(encodeOutput(this.operation().definition, output)));
  }

  async checkpoint(state: unknown): Promise<void> {
    if (!(await saveCheckpoint(this.services.db, this.job.id, this.owner, state))) this.loseJob();
  }

  /** Runs the job to its end here, or gives it back for a retry; never throws. */
  async run(): Promise<void> {
    const heartbeat = this.startHeartbeat();
    try {
      await this.runOnce();
    } catch (error) {
      await this.fail(error).catch((cause: unknown) =>
        this.services.log.error({ err: cause, asyncJob: this.id }, 'asynchronous job: the failure could not be recorded'),
      );
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async runOnce(): Promise<void> {
    const { maxAttempts } = this.services.config.jobs;
    await this.record.start();
    if (this.record.gone || this.signal.aborted) return this.end(undefined);
    if (this.job.attempts > maxAttempts) {
      const text = `The job was started ${maxAttempts} times without finishing (its servers stopped or failed): ${this.job.checkpoint === undefined ? 'no work was recorded' : 'it stopped after its last checkpoint'}`;
      return this.end(outcomeParameters(text, 'transient'), 'error');
    }
    const identity = await this.starterNow();
    if (identity === undefined) {
      const text = 'The membership that started the job was removed or deactivated before it ran: nothing was done as it';
      return this.end(outcomeParameters(text, 'forbidden'), 'error', text);
    }
    const result = await invokeOperation(this.operation(), this.job.input as Record<string, unknown>, {
      level: this.job.level,
      resourceType: this.job.resourceType,
      id: this.job.resourceId,
      ctx: this.contextFor(identity, `job-${this.job.id}-${this.job.attempts}`),
      db: this.services.db,
      job: this,
    });
    await this.end(asParameters(result.resource));
  }

  /** A transient database error is retried later (from the last checkpoint); anything else ends the job. */
  private async fail(error: unknown): Promise<void> {
    const { maxAttempts, retryBaseMs } = this.services.config.jobs;
    if (this.lost) return;
    if (isTransientDatabaseError(error)) {
      if (this.job.attempts < maxAttempts) {
        const delay = Math.min(MAX_RETRY_DELAY_MS, retryBaseMs * 2 ** (this.job.attempts - 1));
        this.services.log.warn({ err: error, asyncJob: this.id, attempt: this.job.attempts, retryInMs: delay }, 'asynchronous job: transient failure, retried later');
        await retryJobLater(this.services.db, this.id, this.owner, delay, String(error));
        return;
      }
      this.services.log.error({ err: error, asyncJob: this.id }, 'asynchronous job: transient failures on every attempt; it fails');
      const text = `The job failed on a transient database error in each of its ${maxAttempts} attempts; the last: ${messageOf(error)}`;
      return this.end(outcomeParameters(text, 'transient'), 'error', text);
    }
    const failure = toOperationOutcomeError(error);
    if (failure.status >= 500) this.services.log.error({ err: error, asyncJob: this.id }, 'asynchronous job failed');
    const parameters: Parameters = { resourceType: 'Parameters', parameter: [{ name: 'outcome', resource: failure.outcome }] };
    await this.end(parameters, 'error', failure.outcome.issue?.[0]?.details?.text);
  }

  /** Records the job's end on its AsyncJob, then takes it off the queue (a crash between the two resumes it, and it ends again). */
  private async end(output: Parameters | undefined, status: 'completed' | 'error' = 'completed', reason?: string): Promise<void> {
    if (this.lost) return;
    if (!this.record.gone) await this.record.finish(output, status);
    await endJob(this.services.db, this.id, this.owner, reason);
  }

  /**
   * The identity that started the job, as its membership stands now: a job waits in the queue or
   * resumes later, and a member removed, deactivated, demoted or given a narrower AccessPolicy
   * meanwhile must not go on acting with what they had. Undefined when the membership is gone.
   */
  private async starterNow(): Promise<Identity | undefined> {
    const saved = this.job.identity;
    const withScopes: Identity = { ...saved, scopes: resourceScopesOf(saved.scope) };
    if (saved.membershipId === undefined) return withScopes;
    const membership = await this.services.auth.readMembership(`ProjectMembership/${saved.membershipId}`);
    if (membership === undefined || membership.meta?.project !== saved.projectId) return undefined;
    const now = await this.services.auth.identityFor(membership);
    return { ...withScopes, superAdmin: now.superAdmin, projectAdmin: now.projectAdmin, accessPolicy: now.accessPolicy };
  }

  private operation(): Operation {
    return resolveOperation(this.job.operation, this.job.level, this.job.resourceType);
  }

  private startHeartbeat(): NodeJS.Timeout {
    const { asyncJobStaleMs } = this.services.config;
    const timer = setInterval(() => {
      // A cancellation through another server is only in the database.
      void this.record.refresh().catch(() => undefined);
      renewLease(this.services.db, this.id, this.owner, asyncJobStaleMs)
        .then((held) => (held ? undefined : this.loseJob()))
        .catch((error: unknown) => this.services.log.warn({ err: error, asyncJob: this.id }, 'asynchronous job: lease not renewed'));
    }, asyncJobStaleMs / 4);
    timer.unref();
    return timer;
  }

  /**
   * This server is shutting down: the job goes back to the queue at once (any server resumes it
   * from its last checkpoint) and this run stops at its next safe point, writing nothing more.
   */
  async handBack(): Promise<void> {
    if (this.lost) return;
    this.lost = true;
    this.controller.abort();
    await releaseJob(this.services.db, this.id, this.owner).catch((error: unknown) =>
      this.services.log.warn({ err: error, asyncJob: this.id }, 'asynchronous job: not handed back; another server resumes it once its lease passes'),
    );
  }

  /** The job is no longer this server's: stop, and write nothing more. */
  private loseJob(): void {
    if (this.lost) return;
    this.lost = true;
    this.services.log.warn({ asyncJob: this.id }, 'asynchronous job: no longer held by this server (cancelled, or resumed elsewhere); it stops');
    this.controller.abort();
  }
}

function outcomeParameters(text: string, code: 'transient' | 'exception' | 'forbidden'): Parameters {
  return { resourceType: 'Parameters', parameter: [{ name: 'outcome', resource: outcome([issue(code, text)]) }] };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
