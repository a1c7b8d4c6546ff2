import type { OperationOutcomeIssue, Resource } from '../../fhir/types.js';
import { checkConstraints } from '../invariants/constraints.js';
import type { CompiledProfile } from './tree.js';

/**
 * The one place a profile's invariants (the `constraint`s of its snapshot elements) are evaluated,
 * by the invariants engine (src/validation/invariants/): the profile's own constraints, not the
 * base definitions' ones every write checks already. Each issue names the profile url like the
 * other profile issues (validate.ts) do.
 */
export function profileInvariants(resource: Resource, profile: CompiledProfile, options: { warnings: boolean }): OperationOutcomeIssue[] {
  return checkConstraints(resource as Record<string, unknown>, profile.elements, options).map((found) => ({
    ...found,
    details: { text: `${found.details?.text ?? ''} (profile ${profile.url})` },
  }));
}
