import { sessionDetails } from '../../auth/session-details.js';
import { unauthorized } from '../../auth/authenticate.js';
import type { HonoContext } from '../route.js';

/**
 * `GET /auth/me`: who the bearer token speaks for, in the shape Medplum's client reads after each
 * login (user, profile, project, membership, config, accessPolicy, security). Never a secret.
 */
export async function meHandler(c: HonoContext): Promise<Response> {
  const details = await sessionDetails(c.get('services').auth.db, c.get('ctx').identity);
  // The token was valid a moment ago, but what it names is gone: the caller must sign in again.
  if (!details) throw unauthorized('The membership or profile behind this token no longer exists: sign in again', true);
  return Response.json(details, { headers: { 'Cache-Control': 'no-store' } });
}
