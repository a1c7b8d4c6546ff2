import { OperationOutcomeError } from '../../fhir/outcome.js';
import type { OperationOutcomeIssue } from '../../fhir/types.js';

/**
 * `Prefer: handling=lenient`: a parameter's 400 becomes a warning and the parameter is ignored;
 * otherwise the 400 is the search's answer.
 */
export class Leniency {
  /** The ignored problems, reported with the result. */
  readonly warnings: OperationOutcomeIssue[] = [];

  constructor(private readonly lenient: boolean) {}

  /** The work's result, or undefined when it failed with a 400 that lenient handling ignores. */
  tolerate<T>(work: () => T): T | undefined {
    try {
      return work();
    } catch (error) {
      if (!this.ignores(error)) throw error;
      this.warnings.push(...error.outcome.issue.map((i) => ({ ...i, severity: 'warning' as const })));
      return undefined;
    }
  }

  private ignores(error: unknown): error is OperationOutcomeError {
    if (!this.lenient || !(error instanceof OperationOutcomeError) || error.status !== 400) return false;
    // A parameter that is understood but too costly is refused even under lenient handling:
    // ignoring it would widen the search.
    return !error.outcome.issue.some((i) => i.code === 'too-costly');
  }
}
