import type { MiddlewareHandler } from 'hono';
import type { AuthService } from '../auth/service.js';
import { knownCaller, type KnownCaller } from '../auth/authenticate.js';
import { authorizationHeader } from '../graphql/http-body.js';
import type { Admission } from './admission.js';
import type { AppEnv } from './route.js';
import { clientGoneOf } from './client-gone.js';

/** Paths served whatever the load: health checks (and metrics, should they be mounted) must say how the server is, and operators must get in. */
const BYPASS = /^\/(?:healthcheck|metrics)(?:\/|$)|^\/(?:admin|\.well-known)\//;

/** Requests whose caller is not known yet (no token, or one not yet verified) share one lane: a name no project id can have. */
const UNKNOWN_CALLER = '(unknown caller)';

/**
 * Admission control in front of every handler (src/http/admission.ts). A request's lane is the
 * project of its bearer token when that token was verified before (a map lookup; verifying it here
 * would do the authentication's work outside the bound): a flood of new or invalid tokens then
 * shares one lane instead of refusing known projects.
 */
export function admissionControl(admission: Admission, auth: AuthService): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set('admission', admission);
    if (BYPASS.test(c.req.path)) return next();
    const known = knownCaller(auth, authorizationHeader(c));
    if (known) c.set('knownCaller', known);
    const release = await admission.enter(laneOf(known), clientGoneOf(c));
    try {
      await next();
    } finally {
      release();
    }
  };
}

/**
 * The admission lane of a request whose bearer token the identity cache holds (knownCaller): its
 * project id as it is (no string built per request); or the lane of unknown callers.
 */
export function laneOf(known: KnownCaller | undefined): string {
  return known ? known.identity.projectId : UNKNOWN_CALLER;
}
