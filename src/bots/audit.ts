import type { AuthService } from '../auth/service.js';
import type { Bot } from '../fhir/resources.js';
import type { RequestContext } from '../operations/context.js';
import type { SandboxResult } from './sandbox/pool.js';

const MAX_LOG_CHARS = 10_000;

interface Execution {
  started: Date;
  ended: Date;
  result: SandboxResult;
  status: number;
}

/**
 * One AuditEvent per run, in the Bot's project: the Bot, who asked, the outcome (0 success, 4
 * minor failure: the bot threw or hit a limit), the period it ran, and its console output.
 */
export async function recordExecution(auth: AuthService, ctx: RequestContext, bot: Bot, execution: Execution): Promise<void> {
  const { result } = execution;
  const botRef = { reference: `Bot/${bot.id}`, display: bot.name };
  const requester = ctx.identity.profile ?? ctx.identity.subject;
  const text = [...result.logs, ...(result.failure ? [`${result.failure.kind}: ${result.failure.message}`] : [])].join('\n').slice(0, MAX_LOG_CHARS);
  await auth.repo(bot.meta!.project!).createResource('AuditEvent', {
    resourceType: 'AuditEvent',
    type: { system: 'http://terminology.hl7.org/CodeSystem/audit-event-type', code: 'rest', display: 'RESTful Operation' },
    subtype: [{ system: 'http://hl7.org/fhir/restful-interaction', code: 'operation', display: '$execute' }],
    action: 'E',
    period: { start: execution.started.toISOString(), end: execution.ended.toISOString() },
    recorded: execution.ended.toISOString(),
    outcome: result.failure ? '4' : '0',
    ...(text ? { outcomeDesc: text } : {}),
    agent: [{ ...(requester ? { who: { reference: requester } } : {}), requestor: true }],
    source: { observer: botRef },
    entity: [{ what: botRef }],
  });
}
