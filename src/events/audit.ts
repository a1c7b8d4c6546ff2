import type { Repository } from '../storage/repository.js';
import type { Resource } from '../fhir/types.js';
import type { AttemptResult } from './rest-hook.js';

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
 * The search parameters of delivery AuditEvents that are indexed: what readers search them by
 * (`entity`: the Subscription or the resource; `date`, `outcome`) and what a patient's access
 * needs. `agent` and `source` (the Subscription again), `type` and `action` (the same for every
 * one) are not: a row each costs more than the AuditEvent itself.
 */
const INDEXED: ReadonlySet<string> = new Set(['entity', 'date', 'outcome', 'patient', '_compartment']);

/**
 * One AuditEvent per delivery attempt (outcome, HTTP status, duration), readable in the project,
 * written in the transaction that records the attempts' outcome (their outbox rows finished or
 * rescheduled): both are kept or neither, and a server killed before it committed leaves rows
 * that are attempted again, with their AuditEvents. One statement per project however many
 * attempts, on the repository's path for resources the server builds (no validation: their shape
 * is fixed here). AuditEvents never trigger subscriptions (SubscriptionChangeLog), so these never feed
 * themselves.
 */
export async function writeAuditEvents(repoOf: (projectId: string) => Repository, attempts: readonly Attempt[]): Promise<void> {
  const byProject = new Map<string, Attempt[]>();
  for (const attempt of attempts) {
    const list = byProject.get(attempt.projectId);
    if (list) list.push(attempt);
    else byProject.set(attempt.projectId, [attempt]);
  }
  for (const [projectId, list] of byProject) {
    await repoOf(projectId).insertServerBuilt(list.map(auditEventOf), INDEXED);
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
