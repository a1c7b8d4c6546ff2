import type { OperationOutcomeIssue, Resource } from '../../fhir/types.js';
import type { CompiledProfile } from './tree.js';

/**
 * The one place a profile's invariants (the `constraint`s of its snapshot elements, the base's
 * and the profile's own) are evaluated: the FHIRPath invariants engine plugs in here, as
 * `return checkConstraints(resource, profile.elements, options)` (src/validation/invariants/).
 * Until it does, profile invariants are not checked. Issues it returns should name the profile
 * url like the other profile issues (validate.ts) do.
 */
export function profileInvariants(resource: Resource, profile: CompiledProfile, options: { warnings: boolean }): OperationOutcomeIssue[] {
  void resource;
  void profile;
  void options;
  return [];
}
