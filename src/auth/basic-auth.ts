import { isFhirId } from '../fhir/ids.js';
import { OperationOutcomeError, outcome, issue } from '../fhir/outcome.js';
import type { Identity } from '../identity/identity.js';
import type { ClientApplication } from '../fhir/resources.js';
import { clientMembership, defaultClientScope, findClient } from './client-login.js';
import { secretAcceptedUntil } from './client-secrets.js';
import { OAuthError } from './oauth-errors.js';
import { grantScope } from './scope-grant.js';
import { sha256Base64Url } from './secrets.js';
import type { AuthService } from './service.js';
import { ADDRESS_RULE, CLIENT_RULE, type ThrottleRule } from './throttle.js';

/**
 * HTTP Basic credentials (client id and secret, RFC 7617) on the FHIR API, as Medplum accepts
 * them: its client's `setBasicAuth` sends them on every request while it holds no token. The
 * request acts as a client credentials token of that client would: its membership, AccessPolicy
 * and the `system/` scopes of its `defaultScope` (else `system/*.*`).
 *
 * A secret is verified once (scrypt) and the identity then kept in the identity cache under a
 * SHA-256 of the credentials, as verified tokens are (a minute at most, bounded): a change of the
 * client, its membership, policy or project drops it on every server as it drops tokens, and so
 * does a change of the secret (AuthService.clientSecretChanged). An identity verified with the
 * previous secret during a rotation's grace is kept no longer than the grace.
 */

const BASIC = /^Basic ([A-Za-z0-9+/]+=*)$/i;

/** 401 `login` with a Basic challenge: the credentials sent were Basic ones. */
export function basicUnauthorized(text: string): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue('login', text)]), 401, { 'WWW-Authenticate': 'Basic realm="Flint", charset="UTF-8"' });
}

/** Whether an Authorization value uses the Basic scheme (any case). */
export function isBasic(header: string): boolean {
  return header.length > 6 && header.slice(0, 6).toLowerCase() === 'basic ';
}

/**
 * The identity of a client presenting `Basic base64(client_id:client_secret)`; 401 when it cannot
 * be one. Wrong secrets count against the client and against the caller's address (`addressOf`).
 */
export async function basicIdentity(auth: AuthService, header: string, addressOf?: () => string): Promise<Identity> {
  const key = `basic:${sha256Base64Url(header)}`;
  const cached = auth.identities.get(key);
  if (cached) return cached;
  const { id, secret } = credentialsOf(header);
  const found = isFhirId(id) ? await findClient(auth, id) : undefined;
  if (!found?.hashes) throw basicUnauthorized('Unknown client or wrong secret');
  const keys = throttleKeys(id, addressOf?.());
  const acceptedUntil = await secretAcceptedUntil(auth.secrets, id, secret, found.hashes, () => {
    const wait = Math.max(...keys.map(([key, rule]) => auth.throttle.retryAfter(key, rule)));
    if (wait > 0) throw throttled(wait);
  });
  if (acceptedUntil === undefined) {
    for (const [key, rule] of keys) auth.throttle.fail(key, rule);
    throw basicUnauthorized('Unknown client or wrong secret');
  }
  if (found.client.status === 'off') throw basicUnauthorized('This client application is switched off');
  const membership = await clientMembership(auth, id, found);
  if (!membership) throw basicUnauthorized('This client application has no membership in its project');
  const identity = await auth.identityFor(membership, { subject: `ClientApplication/${id}`, clientId: id, scope: grantedDefaultScope(found.client) });
  auth.identities.set(key, identity, acceptedUntil);
  return identity;
}

/** The counters a wrong secret adds to: the client's, and its address's when known (an unknown one is no shared key). */
function throttleKeys(clientId: string, address: string | undefined): [string, ThrottleRule][] {
  const keys: [string, ThrottleRule][] = [[`basic-client:${clientId}`, CLIENT_RULE]];
  if (address && address !== 'unknown') keys.push([`basic-address:${address}`, ADDRESS_RULE]);
  return keys;
}

/** `client_id:client_secret` as Medplum's client encodes it: the bytes as they are, split at the first colon. */
function credentialsOf(header: string): { id: string; secret: string } {
  const match = BASIC.exec(header);
  if (!match) throw basicUnauthorized('The Authorization header must be "Basic base64(client_id:client_secret)"');
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw basicUnauthorized('HTTP Basic credentials must be client_id:client_secret');
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** The scope a client credentials token without `scope` gets (token endpoint), for the system context. */
function grantedDefaultScope(client: ClientApplication): string {
  try {
    return grantScope(defaultClientScope(client), 'system');
  } catch (error) {
    if (error instanceof OAuthError) throw basicUnauthorized(`The client's defaultScope cannot be granted: ${error.description}`);
    throw error;
  }
}

function throttled(retryAfter: number): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue('throttled', `Too many wrong secrets for this client or from this address: try again in ${retryAfter} seconds`)]), 429, {
    'Retry-After': String(retryAfter),
  });
}
