import type { Identity } from '../context.js';
import { OperationOutcomeError, outcome, issue } from '../fhir/outcome.js';
import type { AuthService } from './service.js';
import { TokenError } from './tokens.js';

/** RFC 6750 2.1: `Bearer` (any case), one space, a b64token. Nothing else is accepted. */
const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

/** 401 `login` with `WWW-Authenticate: Bearer` (RFC 6750 3), the reason in both. */
export function unauthorized(text: string, invalidToken: boolean): OperationOutcomeError {
  const challenge = invalidToken
    ? `Bearer realm="Flint", error="invalid_token", error_description="${text.replace(/["\\]/g, '')}"`
    : 'Bearer realm="Flint"';
  return new OperationOutcomeError(outcome([issue('login', text)]), 401, { 'WWW-Authenticate': challenge });
}

/** The bearer token of a request, or a 401 when it is missing or malformed. */
export function bearerToken(request: Request): string {
  const header = request.headers.get('authorization');
  if (header === null || header === '') {
    throw unauthorized('Authentication required: send Authorization: Bearer <access token>', false);
  }
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('The Authorization header must be "Bearer <access token>"', true);
  return match[1];
}

/**
 * The identity behind a request's bearer token: one of our access tokens (ES256, our issuer) or
 * a JWT of a configured external identity provider (validated at its userinfo endpoint, SPEC 5).
 * Recently verified tokens cost a map lookup.
 */
export async function authenticateRequest(auth: AuthService, request: Request): Promise<Identity> {
  const token = bearerToken(request);
  const cached = auth.identities.get(token);
  if (cached) return cached;
  try {
    if (auth.external.providerOf(token)) {
      const result = await auth.external.validate(auth, token);
      auth.identities.set(token, result.identity, result.until);
      return result.identity;
    }
    return await auth.identityOf(token);
  } catch (error) {
    if (error instanceof TokenError) throw unauthorized(error.message, true);
    throw error;
  }
}
