import { allOk, outcome } from '../fhir/outcome.js';
import type { OperationOutcome, OperationOutcomeIssue, Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import { runResourceChecks } from '../validation/resource-checks.js';
import { collectValidationIssues } from '../validation/validator.js';

/**
 * What `$validate` reports about a resource: the same checks a write runs (structure, then the
 * registered checks: bindings, profiles), with warnings. As on a write, the checks beyond shape
 * run only on a resource whose shape is valid, so a write's refusal and `$validate` list the same
 * errors.
 */
export async function validationIssues(
  ctx: RequestContext,
  resource: unknown,
  options: { expectedType: string; profiles: readonly string[] },
): Promise<OperationOutcomeIssue[]> {
  const issues = collectValidationIssues(resource, { expectedType: options.expectedType, warnings: true, fhirBase: ctx.config.fhirBaseUrl });
  if (issues.some(isError)) return issues;
  const checks = await runResourceChecks(resource as Resource, {
    projectId: ctx.identity.projectId,
    db: ctx.database,
    warnings: true,
    profiles: options.profiles,
  });
  return [...issues, ...checks];
}

/** The answer: every issue, or one informational "All OK" (Medplum's text) when there is none. */
export function validationOutcome(issues: OperationOutcomeIssue[]): OperationOutcome {
  return issues.length > 0 ? outcome(issues) : allOk('All OK');
}

export function isError(found: OperationOutcomeIssue): boolean {
  return found.severity === 'error' || found.severity === 'fatal';
}

export function information(text: string): OperationOutcomeIssue {
  return { severity: 'information', code: 'informational', details: { text } };
}
