import type { Logger } from 'pino';
import type { StorageServices } from '../storage/repository.js';
import { systemRepository } from '../auth/accounts.js';
import type { Resource } from '../fhir/types.js';
import type { AttemptResult } from './rest-hook.js';

/** The most AuditEvents written in one statement, and the longest one waits for its batch. */
const BATCH_SIZE = 100;
const BATCH_WAIT_MS = 200;

export interface Attempt {
  readonly projectId: string;
  readonly subscriptionId: string;
  readonly reference: string;
  readonly attempt: number;
  readonly started: Date;
  readonly ended: Date;
  readonly result: AttemptResult;
}

/**
 * One AuditEvent per delivery attempt (outcome, HTTP status, duration), readable in the project,
 * written in batches: at 1,000 deliveries a second one insert per attempt would cost more than the
 * deliveries. AuditEvents never trigger subscriptions (SubscriptionChangeLog), so these never feed
 * themselves. An event waits at most BATCH_WAIT_MS; a failed batch is logged, not retried (the
 * delivery itself is already done or rescheduled).
 */
export class AuditBatches {
  private pending: Attempt[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly storage: StorageServices,
    private readonly log: Logger,
  ) {}

  add(attempt: Attempt): void {
    this.pending.push(attempt);
    if (this.pending.length >= BATCH_SIZE) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), BATCH_WAIT_MS);
  }

  /** Writes what waits; resolves when every batch so far is written. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: Attempt[]): Promise<void> {
    const byProject = new Map<string, Attempt[]>();
    for (const attempt of batch) {
      const list = byProject.get(attempt.projectId);
      if (list) list.push(attempt);
      else byProject.set(attempt.projectId, [attempt]);
    }
    for (const [projectId, attempts] of byProject) {
      try {
        await systemRepository(this.storage, projectId).createResources(attempts.map((attempt) => ({ resourceType: 'AuditEvent', input: auditEventOf(attempt) })));
      } catch (error) {
        this.log.error({ err: error, projectId, count: attempts.length }, 'writing the AuditEvents of subscription deliveries failed');
      }
    }
  }
}

/** Medplum's shape of a delivery's AuditEvent; the duration is the period. */
export function auditEventOf(attempt: Attempt): Resource {
  const { result } = attempt;
  const subscription = { reference: `Subscription/${attempt.subscriptionId}` };
  const text = result.status !== undefined ? `Attempt ${attempt.attempt} received status ${result.status}` : `Attempt ${attempt.attempt} failed: ${result.error ?? 'unknown error'}`;
  return {
    resourceType: 'AuditEvent',
    type: { system: 'http://terminology.hl7.org/CodeSystem/audit-event-type', code: 'transmit', display: 'Transmit Record' },
    action: 'E',
    recorded: attempt.ended.toISOString(),
    period: { start: attempt.started.toISOString(), end: attempt.ended.toISOString() },
    outcome: result.ok ? '0' : '4',
    outcomeDesc: text,
    agent: [{ who: subscription, requestor: false }],
    source: { observer: subscription },
    entity: [{ what: { reference: attempt.reference } }, { what: subscription }],
  } as Resource;
}
