import type { LaunchContext } from '../identity/identity.js';
import type { Login, ProjectMembership } from '../fhir/resources.js';
import type { AccessClaims } from './tokens.js';
import { parseReference } from './accounts.js';

/** The launch context a verified token carries (its `patient` and `encounter` claims). */
export function launchOf(claims: AccessClaims): LaunchContext | undefined {
  if (claims.patient === undefined && claims.encounter === undefined) return undefined;
  return { ...(claims.patient ? { patient: claims.patient } : {}), ...(claims.encounter ? { encounter: claims.encounter } : {}) };
}

/**
 * The SMART launch context a Login's tokens carry. A user whose profile is a Patient acts for that
 * patient (a standalone patient launch needs no picker: the patient is the user's own record).
 */
export async function launchContextOf(_login: Login, membership: ProjectMembership): Promise<{ patient?: string; encounter?: string }> {
  const profile = parseReference(membership.profile?.reference);
  return profile?.[0] === 'Patient' ? { patient: profile[1] } : {};
}
