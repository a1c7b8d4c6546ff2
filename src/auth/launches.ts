import type { SqlExecutor } from '../db/database.js';
import { isFhirId } from '../fhir/ids.js';
import type { SmartAppLaunch } from '../fhir/resources.js';
import { readAny } from './accounts.js';
import { oauth } from './oauth-errors.js';
import { useOnce } from './used-values.js';

/**
 * How long a launch id may be used to sign in after ClientApplication/$smart-launch made it. SMART
 * App Launch calls the value opaque and short-lived: ten minutes leave room for a sign-in form.
 */
export const LAUNCH_SECONDS = 600;

/**
 * The SmartAppLaunch a sign-in names (`launch` of /oauth2/authorize or /auth/login), if it can still
 * be used: known, made less than LAUNCH_SECONDS ago. Otherwise `invalid_request` saying why.
 */
export async function usableLaunch(db: SqlExecutor, launchId: string): Promise<SmartAppLaunch> {
  const launch = isFhirId(launchId) ? await readAny(db, 'SmartAppLaunch', launchId) : undefined;
  if (!launch) throw oauth.invalidRequest('The launch is unknown: start the app again from the EHR ($smart-launch)');
  if (Date.now() - expiryBase(launch) > LAUNCH_SECONDS * 1000) {
    throw oauth.invalidRequest(`The launch has expired (a launch can be used for ${LAUNCH_SECONDS / 60} minutes): start the app again from the EHR`);
  }
  return launch;
}

/**
 * Binds a launch to the one sign-in that uses it: a second sign-in with the same launch id is
 * refused, on any server (auth_used_value), so a launch URL that leaks cannot be replayed.
 */
export async function bindLaunch(db: SqlExecutor, launch: SmartAppLaunch): Promise<void> {
  const until = new Date(expiryBase(launch) + LAUNCH_SECONDS * 1000);
  if (!(await useOnce(db, `launch:${launch.id}`, until))) {
    throw oauth.invalidRequest('The launch was already used to sign in: start the app again from the EHR');
  }
}

/** The project a launch was made in: a sign-in with it must be in the same project. */
export function launchProject(launch: SmartAppLaunch): string {
  return launch.meta!.project!;
}

function expiryBase(launch: SmartAppLaunch): number {
  const made = Date.parse(launch.meta?.lastUpdated ?? '');
  return Number.isNaN(made) ? 0 : made;
}
