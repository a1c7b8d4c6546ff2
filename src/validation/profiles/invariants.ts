import type { OperationOutcomeIssue, Resource } from '../../fhir/types.js';
import type { CompiledProfile } from './tree.js';

/**
 * The one place a profile's invariants (the `constraint`s of its snapshot elements, the base's
 * and the profile's own) are evaluated: the FHIRPath invariants engine
 * (`checkConstraints(resource, elements, { warnings })` in src/validation/invariants/) plugs in
 * here. Until it does, profile invariants are not checked.
 */
export function profileInvariants(resource: Resource, profile: CompiledProfile, options: { warnings: boolean }): OperationOutcomeIssue[] {
  void resource;
  void profile;
  void options;
  return [];
}
