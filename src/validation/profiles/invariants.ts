import type { OperationOutcomeIssue, Resource } from '../../fhir/types.js';
import { checkConstraints, checkInstanceConstraints, instanceBase } from '../invariants/constraints.js';
import type { ResourceContext } from '../invariants/evaluate.js';
import type { CompiledProfile, ProfileNode } from './tree.js';
import type { Found } from './values.js';

/**
 * The one place a profile's invariants (the `constraint`s of its snapshot elements) are evaluated,
 * by the invariants engine (src/validation/invariants/): the profile's own constraints, not the
 * base definitions' ones every write checks already. Each issue names the profile url like the
 * other profile issues (validate.ts) do.
 */
export function profileInvariants(resource: Resource, profile: CompiledProfile, options: { warnings: boolean }): OperationOutcomeIssue[] {
  return namingProfile(checkConstraints(resource as Record<string, unknown>, profile.elements, options), profile.url);
}

/** The constraints the profile walk evaluates itself (ProfileNode.invariants) on one value of the element. */
export function valueInvariants(found: Found, node: ProfileNode, context: ResourceContext, warnings: boolean, profileUrl: string): OperationOutcomeIssue[] {
  const instance = { value: found.value, location: found.location, base: instanceBase(node.element, found.type) };
  return namingProfile(checkInstanceConstraints(instance, node.invariants, context, { warnings }), profileUrl);
}

function namingProfile(issues: OperationOutcomeIssue[], url: string): OperationOutcomeIssue[] {
  return issues.map((found) => ({ ...found, details: { text: `${found.details?.text ?? ''} (profile ${url})` } }));
}
