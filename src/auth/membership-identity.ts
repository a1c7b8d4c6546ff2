import type { AccessRules, Identity } from '../identity/identity.js';
import { resourceScopesOf } from '../identity/scopes.js';
import type { AccessPolicy, Project, ProjectMembership } from '../fhir/resources.js';
import { parseReference } from './accounts.js';

/**
 * The Identity a project membership confers: its project, admin flags and AccessPolicy (with
 * Medplum's variables replaced for the member), plus what the token or client adds (`extra`).
 */
export function identityFromMembership(
  membership: ProjectMembership,
  project: Project | undefined,
  policy: AccessPolicy | undefined,
  extra: Partial<Identity>,
): Identity {
  return {
    // The project a membership is stored in is the one it grants (its `project` reference could lie).
    projectId: membership.meta!.project!,
    superAdmin: project?.superAdmin === true,
    projectAdmin: membership.admin === true,
    membershipId: membership.id,
    profile: membership.profile?.reference,
    subject: membership.user?.reference,
    accessPolicy: accessRulesOf(membership, policy),
    ...extra,
    ...resourceScopesFor(extra),
  };
}

function accessRulesOf(membership: ProjectMembership, stored: AccessPolicy | undefined): AccessRules | undefined {
  const policyRef = parseReference(membership.accessPolicy?.reference);
  if (!policyRef) return undefined;
  const policy = stored && policyForMember(stored, membership.profile?.reference);
  // A membership that names a missing AccessPolicy allows nothing rather than everything.
  return {
    policyId: policyRef[1],
    // A rule names its type (min 1, so validation ensures it); one without would allow nothing.
    resources: (policy?.resource ?? []).flatMap((rule) =>
      rule.resourceType
        ? [
            {
              resourceType: rule.resourceType,
              readonly: rule.readonly === true,
              ...(rule.interaction ? { interactions: rule.interaction.filter((code) => code !== null) } : {}),
              criteria: rule.criteria,
              compartment: rule.compartment?.reference,
            },
          ]
        : [],
    ),
    compartment: policy?.compartment?.reference,
  };
}

/**
 * The AccessPolicy as it applies to a member whose profile is `profile`: Medplum's variables
 * replaced (withProfileVariables) in the elements Flint enforces, the rules' `criteria` and
 * `compartment` and the policy's `compartment`. The identity enforces this policy and `/auth/me`
 * shows it, so the two agree.
 */
export function policyForMember(policy: AccessPolicy, profile: string | undefined): AccessPolicy {
  const replace = (text: string | undefined) => withProfileVariables(text, profile);
  const reference = <T extends { reference?: string }>(ref: T | undefined): T | undefined => (ref ? { ...ref, reference: replace(ref.reference) } : ref);
  return {
    ...policy,
    ...(policy.compartment ? { compartment: reference(policy.compartment) } : {}),
    ...(policy.resource
      ? {
          resource: policy.resource.map((rule) => ({
            ...rule,
            ...(rule.criteria !== undefined ? { criteria: replace(rule.criteria) } : {}),
            ...(rule.compartment ? { compartment: reference(rule.compartment) } : {}),
          })),
        }
      : {}),
  };
}

/** The parsed resource scopes of a token's scope claim (parsed once: the identity cache keeps them). */
function resourceScopesFor(extra: Partial<Identity>): Pick<Identity, 'scopes'> {
  const scopes = extra.scopes ?? resourceScopesOf(extra.scope);
  return scopes ? { scopes } : {};
}

/**
 * Medplum's AccessPolicy variables for the member's profile, so one policy serves every patient
 * (a project's defaultPatientAccessPolicy): `%patient` and `%profile` become the profile's
 * reference, `%patient.id` and `%profile.id` its id.
 */
export function withProfileVariables(text: string | undefined, profile: string | undefined): string | undefined {
  if (text === undefined || profile === undefined || !text.includes('%')) return text;
  const id = parseReference(profile)?.[1] ?? profile;
  return text.replaceAll('%patient.id', id).replaceAll('%profile.id', id).replaceAll('%patient', profile).replaceAll('%profile', profile);
}
