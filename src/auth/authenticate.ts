import type { Identity } from '../identity/identity.js';
import { OperationOutcomeError, outcome, issue } from '../fhir/outcome.js';
import type { AuthService } from './service.js';
import { TokenError, type KnownIdentity } from './tokens.js';
import { basicIdentity, isBasic } from './basic-auth.js';

/** RFC 6750 2.1: `Bearer` (any case), one space, a b64token. Nothing else is accepted. */
const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

/** 401 `login` with `WWW-Authenticate: Bearer` (RFC 6750 3), the reason in both. */
export function unauthorized(text: string, invalidToken: boolean): OperationOutcomeError {
  const challenge = invalidToken
    ? `Bearer realm="Flint", error="invalid_token", error_description="${text.replace(/["\\]/g, '')}"`
    : 'Bearer realm="Flint"';
  return new OperationOutcomeError(outcome([issue('login', text)]), 401, { 'WWW-Authenticate': challenge });
}

/** The text of the 400 for a repeated Authorization header (REST, GraphQL and the token endpoint alike). */
export const REPEATED_AUTHORIZATION =
  'The Authorization header must appear once, with a single credential (several Authorization headers, or several credentials separated by commas, were sent)';

/**
 * 400 `invalid` for a request with several Authorization headers, or several credentials in one
 * (RFC 6750 3.1 `invalid_request`: a request that repeats a parameter or uses more than one
 * method is malformed, 400, not unauthenticated). Which credential counts must not depend on how a
 * route reads headers (Node keeps the first, fetch Headers join them all), so none is used.
 */
export function repeatedAuthorization(): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue('invalid', REPEATED_AUTHORIZATION)]), 400, {
    'WWW-Authenticate': `Bearer realm="Flint", error="invalid_request", error_description="${REPEATED_AUTHORIZATION}"`,
  });
}

/** An element of an HTTP list that is an auth-param (`name=value`), not a credential of its own. */
const AUTH_PARAM = /^\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+\s*=/;

/**
 * Whether an Authorization value holds more than one credential: headers sent several times and
 * joined with commas (by fetch Headers, which REST reads, by src/graphql/http-body.ts for GraphQL,
 * or by a proxy), or a comma-separated list written as one. The value is an HTTP list (RFC 9110
 * 5.3, 11.6.2): empty elements do not count, nor do auth-params (`realm="x"`) that belong to the
 * credential before them. Bearer and Basic credentials never contain a comma.
 */
export function hasSeveralCredentials(header: string): boolean {
  if (!header.includes(',')) return false;
  let credentials = 0;
  for (const element of header.split(',')) {
    if (element.trim() !== '' && !AUTH_PARAM.test(element) && ++credentials > 1) return true;
  }
  return false;
}

/** The bearer token of a request, or a 401 when it is missing or malformed (400 when repeated). */
export function bearerToken(request: Request): string {
  return bearerTokenOf(request.headers.get('authorization'));
}

/**
 * The bearer token in an Authorization header value (repeated headers joined with ", ", as fetch
 * Headers give them), or a 401 when it is missing or malformed (400 when repeated).
 */
export function bearerTokenOf(header: string | null | undefined): string {
  if (header === null || header === undefined || header === '') {
    throw unauthorized('Authentication required: send Authorization: Bearer <access token>', false);
  }
  if (hasSeveralCredentials(header)) throw repeatedAuthorization();
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('The Authorization header must be "Bearer <access token>"', true);
  return match[1];
}

/**
 * The identity behind a request's bearer token: one of our access tokens (ES256, our issuer) or
 * a JWT of a configured external identity provider (validated at its userinfo endpoint, SPEC 5);
 * or behind HTTP Basic client credentials (basic-auth.ts). Recently verified ones cost a map lookup.
 */
export function authenticateRequest(auth: AuthService, request: Request, addressOf?: () => string): Promise<Identity> {
  return authenticateAuthorization(auth, request.headers.get('authorization'), { addressOf });
}

/**
 * The token of an Authorization header that authenticateAuthorization takes as a bearer token
 * (one credential, `Bearer <b64token>`); undefined for any other value, which it refuses or reads
 * as Basic.
 */
export function wellFormedBearer(header: string | undefined): string | undefined {
  if (header === lastBearer.header) return lastBearer.token;
  if (!header || hasSeveralCredentials(header)) return undefined;
  const token = BEARER.exec(header)?.[1];
  if (token !== undefined) lastBearer = { header, token };
  return token;
}

/**
 * The last well-formed bearer header and its token. A client sends the same header request after
 * request: comparing it with the last one spares the pattern's walk over the whole token, and the
 * token string kept here has its hash computed already, which the identity cache's lookup would
 * otherwise compute again for each request's new copy of the text (both showed in profiles of
 * reads by id). A function of the header's text alone, so one for the process.
 */
let lastBearer: { readonly header: string | undefined; readonly token: string | undefined } = { header: undefined, token: undefined };

/**
 * The identity the cache holds for the bearer token of `header`, looked up once for a request's
 * admission (its lane) and passed on to its authentication (authenticateAuthorization's `known`).
 */
export function knownCaller(auth: AuthService, header: string | null | undefined): KnownCaller | undefined {
  const token = wellFormedBearer(header ?? undefined);
  const known = token === undefined ? undefined : auth.identities.lookup(token);
  // Named fields rather than a spread: a spread's copy took V8's slow path in profiles of reads.
  return known && { identity: known.identity, until: known.until, removals: known.removals, header: header! };
}

/**
 * The identity knownCaller found, when it still stands for `header` (the cache dropped nothing
 * since and it has not expired): what authenticateAuthorization answers first, without a promise.
 */
export function recentIdentity(auth: AuthService, header: string | null | undefined, known: KnownCaller | undefined): Identity | undefined {
  return known && known.header === header && auth.identities.stillHolds(known) ? known.identity : undefined;
}

/** What knownCaller found, and for which Authorization header. */
export interface KnownCaller extends KnownIdentity {
  readonly header: string;
}

/** What authenticateAuthorization may be given beside the header; each part is optional. */
export interface AuthenticationOptions {
  /** What knownCaller found for this header at admission: spares a second lookup. */
  readonly known?: KnownCaller;
  /** The caller's address, asked only when a wrong Basic secret is counted against it. */
  readonly addressOf?: () => string;
}

/**
 * authenticateRequest from the Authorization header's value alone: the HTTP layer reads it from
 * Node's parsed headers, without building the fetch Headers of the whole request (a noticeable
 * share of a read's CPU; measured: see bench/RESULTS.md).
 */
export async function authenticateAuthorization(auth: AuthService, header: string | null | undefined, options: AuthenticationOptions = {}): Promise<Identity> {
  const { known, addressOf } = options;
  const recent = recentIdentity(auth, header, known);
  if (recent) return recent;
  if (header && isBasic(header)) {
    if (hasSeveralCredentials(header)) throw repeatedAuthorization();
    return basicIdentity(auth, header, addressOf);
  }
  const token = bearerTokenOf(header);
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
