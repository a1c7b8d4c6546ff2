import type { LaunchContext } from '../identity/identity.js';
import type { SqlExecutor } from '../db/database.js';
import type { Login, ProjectMembership } from '../fhir/resources.js';
import type { AccessClaims } from './tokens.js';
import { parseReference, readAny } from './accounts.js';

/** The launch context a verified token carries (its `patient` and `encounter` claims). */
export function launchOf(claims: AccessClaims): LaunchContext | undefined {
  if (claims.patient === undefined && claims.encounter === undefined) return undefined;
  return { ...(claims.patient ? { patient: claims.patient } : {}), ...(claims.encounter ? { encounter: claims.encounter } : {}) };
}

/**
 * The SMART launch context a Login's tokens carry. An EHR launch (the Login names the
 * SmartAppLaunch that ClientApplication/$smart-launch made) gives its patient and encounter, on
 * every token of the Login, refreshed ones included. Without one, a user whose profile is a Patient
 * acts for that patient (a standalone patient launch needs no picker: the patient is the user's
 * own record).
 */
export async function launchContextOf(db: SqlExecutor, login: Login, membership: ProjectMembership): Promise<{ patient?: string; encounter?: string }> {
  const launchRef = parseReference(login.launch?.reference);
  if (launchRef?.[0] === 'SmartAppLaunch') {
    const launch = await readAny(db, 'SmartAppLaunch', launchRef[1]);
    // Only a launch of the Login's own project counts (the sign-in checked it; a moved one is ignored).
    if (launch && launch.meta?.project === membership.meta?.project) {
      const patient = parseReference(launch.patient?.reference);
      const encounter = parseReference(launch.encounter?.reference);
      return {
        ...(patient?.[0] === 'Patient' ? { patient: patient[1] } : {}),
        ...(encounter?.[0] === 'Encounter' ? { encounter: encounter[1] } : {}),
      };
    }
  }
  const profile = parseReference(membership.profile?.reference);
  return profile?.[0] === 'Patient' ? { patient: profile[1] } : {};
}
