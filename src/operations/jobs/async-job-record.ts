import type { Logger } from 'pino';
import { OperationOutcomeError } from '../../fhir/outcome.js';
import type { AsyncJob, Parameters } from '../../fhir/resources.js';
import type { Resource } from '../../fhir/types.js';
import type { ResourceRepository } from '../../storage/types.js';

/** Least time between two progress writes of one job. */
export const PROGRESS_INTERVAL_MS = 1_000;

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'error', 'cancelled']);

/**
 * The AsyncJob resource of a running job: the client's view of it (status, output so far). Every
 * write is conditional on the version last seen (If-Match), so a cancellation is never overwritten:
 * a write that finds the job cancelled (or ended by someone else) keeps that status and tells the
 * job to stop (`onStopped`). Writes are queued, one at a time.
 */
export class AsyncJobRecord {
  private stored: AsyncJob | undefined;
  private writes: Promise<unknown> = Promise.resolve();
  private lastProgress = 0;
  /** Deleted, or ended by someone else: nothing more is written. */
  gone = false;

  constructor(
    readonly id: string,
    private readonly repo: ResourceRepository,
    private readonly log: Logger,
    private readonly onStopped: () => void,
  ) {}

  /** Marks the job active (a resumed job already is: it is read again, and left as it is). */
  async start(): Promise<void> {
    const current = await this.read();
    if (!current || this.gone || current.status === 'cancelled') return;
    if (current.status !== 'active') await this.save({ status: 'active' });
  }

  /** Reads the job again: a cancellation through another server is only in the database. */
  async refresh(): Promise<void> {
    if (!this.gone) await this.read();
  }

  /** Records the output so far, at most once every PROGRESS_INTERVAL_MS. */
  async progress(output: Parameters): Promise<void> {
    if (this.gone || Date.now() - this.lastProgress < PROGRESS_INTERVAL_MS) return;
    this.lastProgress = Date.now();
    await this.save({ output });
  }

  /** The final write: `completed` (or `error`), or `cancelled` when the job was cancelled meanwhile. */
  async finish(output: Parameters | undefined, status: 'completed' | 'error' = 'completed'): Promise<void> {
    await this.save({ status, transactionTime: new Date().toISOString(), ...(output ? { output } : {}) });
  }

  get status(): string | undefined {
    return this.stored?.status;
  }

  private save(changes: Partial<AsyncJob>): Promise<void> {
    const write = this.writes.then(() => this.write(changes));
    this.writes = write.catch(() => undefined);
    return write;
  }

  private async write(changes: Partial<AsyncJob>): Promise<void> {
    for (let attempt = 0; attempt < 5 && !this.gone; attempt++) {
      const stored = this.stored ?? (await this.read());
      if (!stored) return;
      const changed: AsyncJob = { ...stored, ...changes };
      // A job found cancelled (or stopped) keeps that status: only the output and the time are added.
      if (TERMINAL_STATUSES.has(stored.status ?? '')) changed.status = stored.status;
      try {
        const written = await this.repo.updateResource('AsyncJob', this.id, changed, { ifMatch: stored.meta?.versionId });
        this.stored = written.resource as AsyncJob;
        return;
      } catch (error) {
        if (!(error instanceof OperationOutcomeError) || error.status !== 412) throw error;
        await this.read();
      }
    }
    if (!this.gone) throw new Error(`AsyncJob/${this.id} kept changing while the job tried to record its state`);
  }

  /** The stored job (adopted as the one to write over), or undefined when it was deleted. */
  private async read(): Promise<AsyncJob | undefined> {
    try {
      const current = (await this.repo.readResource('AsyncJob', this.id)) as AsyncJob;
      this.adopt(current);
      return current;
    } catch (error) {
      if (error instanceof OperationOutcomeError && (error.status === 404 || error.status === 410)) {
        this.log.warn({ asyncJob: this.id }, 'asynchronous job: its AsyncJob was deleted; the job stops');
        this.gone = true;
        this.onStopped();
        return undefined;
      }
      throw error;
    }
  }

  /** A cancelled job stops its handler; one someone else ended otherwise is left as it is. */
  private adopt(current: AsyncJob): void {
    this.stored = current;
    if (current.status === 'cancelled') this.onStopped();
    if (current.status === 'error' || current.status === 'completed') {
      this.gone = true;
      this.onStopped();
    }
  }
}

/** AsyncJob.output is a Parameters: an operation answering with a resource has it as `return`. */
export function asParameters(resource: Resource): Parameters {
  return resource.resourceType === 'Parameters' ? (resource as Parameters) : { resourceType: 'Parameters', parameter: [{ name: 'return', resource }] };
}
