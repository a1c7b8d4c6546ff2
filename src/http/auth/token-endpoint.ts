import { isFhirId } from '../../fhir/ids.js';
import type { HonoContext } from '../route.js';
import { clientAddress } from '../client-address.js';
import type { ProjectMembership } from '../../fhir/resources.js';
import { hasSeveralCredentials, REPEATED_AUTHORIZATION } from '../../auth/authenticate.js';
import { findUserByEmail, membershipsByExternalId, membershipsReferencing, parseReference, readAny } from '../../auth/accounts.js';
import { verifyClientSecret } from '../../auth/client-secrets.js';
import { clientMembership, defaultClientScope, findClient } from '../../auth/client-login.js';
import { checkPassword, chooseMembership } from '../../auth/logins.js';
import { oauth, OAuthError, readForm } from '../../auth/oauth-errors.js';
import { JWT_BEARER_ASSERTION } from '../../auth/client-assertion.js';
import { safeEqual, sha256Base64Url } from '../../auth/secrets.js';
import { loginAge } from '../../auth/login-record.js';
import type { AuthService } from '../../auth/service.js';
import { type TokenResponse } from '../../auth/tokens.js';
import { ADDRESS_RULE } from '../../auth/throttle.js';
import { checkTokenForm } from '../../auth/request-fields.js';
import { TokenError } from '../../auth/tokens.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** `POST /oauth2/token` (RFC 6749 section 4, RFC 7636, RFC 8693): form-encoded in, JSON out. */
export async function tokenHandler(c: HonoContext): Promise<Response> {
  try {
    const auth = c.get('services').auth;
    // As on every route (authenticate.ts), in this endpoint's error shape (RFC 6749 5.2: a request
    // that repeats a parameter or uses several authentication methods is `invalid_request`).
    const authorization = c.req.header('authorization');
    if (authorization !== undefined && hasSeveralCredentials(authorization)) throw oauth.invalidRequest(REPEATED_AUTHORIZATION);
    const form = await readForm(c.req.raw);
    checkTokenForm(form, auth.config.authMaxFieldLength);
    const grant = form.get('grant_type');
    const address = clientAddress(c);
    let tokens: TokenResponse;
    switch (grant) {
      case 'client_credentials':
        tokens = await clientCredentials(auth, c.req.header('authorization'), form, address);
        break;
      case 'password':
        tokens = await passwordGrant(auth, c, form, address);
        break;
      case 'refresh_token':
        tokens = await refreshGrant(auth, form);
        break;
      case 'authorization_code':
        tokens = await authorizationCode(auth, form);
        break;
      case TOKEN_EXCHANGE:
        tokens = await tokenExchange(auth, form, c);
        break;
      case null:
        throw oauth.invalidRequest('grant_type is required');
      default:
        throw oauth.unsupportedGrant(`grant_type "${grant}" is not supported`);
    }
    return Response.json(tokens, { headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' } });
  } catch (error) {
    if (error instanceof OAuthError) return error.toResponse();
    if (error instanceof TokenError) return oauth.invalidGrant(error.message).toResponse();
    throw error;
  }
}

/** Client id and secret from HTTP Basic (RFC 6749 2.3.1, form-urlencoded parts) or the body. */
function clientCredentialsOf(header: string | undefined, form: URLSearchParams): { id: string; secret: string; basic: boolean } {
  if (header !== undefined) {
    const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header);
    if (!match) throw oauth.invalidClient('The Authorization header must be "Basic base64(client_id:client_secret)"', true);
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw oauth.invalidClient('HTTP Basic credentials must be client_id:client_secret', true);
    const id = decodeURIComponent(decoded.slice(0, colon));
    // RFC 6749 2.3: one way of authenticating the client per request.
    if (form.has('client_secret') || (form.has('client_id') && form.get('client_id') !== id)) {
      throw oauth.invalidRequest('Client credentials go either in the Basic Authorization header or in the body, not both');
    }
    return { id, secret: decodeURIComponent(decoded.slice(colon + 1)), basic: true };
  }
  const id = form.get('client_id');
  const secret = form.get('client_secret');
  if (!id || !secret) throw oauth.invalidRequest('client_id and client_secret are required (in the body or by HTTP Basic)');
  return { id, secret, basic: false };
}

async function clientCredentials(auth: AuthService, header: string | undefined, form: URLSearchParams, address: string): Promise<TokenResponse> {
  const addressKey = `address:${address}`;
  const wait = auth.throttle.retryAfter(addressKey, ADDRESS_RULE);
  if (wait > 0) throw oauth.throttled(wait);
  const asserted = form.has('client_assertion_type') || form.has('client_assertion');
  const { id, found, basic } = asserted ? await assertedClient(auth, header, form) : await secretClient(auth, header, form, addressKey);
  const client = found.client;
  if (client.status === 'off') throw oauth.invalidClient('This client application is switched off', basic);
  const subject = `ClientApplication/${id}`;
  const membership = await clientMembership(auth, id, found);
  if (!membership) throw oauth.invalidClient('This client application has no membership in its project');
  const login = await auth.createLogin({
    authMethod: 'client',
    subject,
    membership,
    clientId: id,
    scope: form.get('scope') ?? defaultClientScope(client),
    remoteAddress: address,
  });
  return auth.issueTokens(login, false, membership);
}

/** Client id and secret (Basic or body), checked against the stored hash; a mismatch counts toward throttling. */
async function secretClient(auth: AuthService, header: string | undefined, form: URLSearchParams, addressKey: string) {
  const { id, secret, basic } = clientCredentialsOf(header, form);
  const found = isFhirId(id) ? await findClient(auth, id) : undefined;
  if (!found?.hashes || !(await verifyClientSecret(auth.secrets, id, secret, found.hashes))) {
    auth.throttle.fail(addressKey, ADDRESS_RULE);
    throw oauth.invalidClient('Unknown client or wrong secret', basic);
  }
  return { id, found, basic };
}

/**
 * SMART Backend Services (RFC 7523 section 2.2): the client proves itself with a JWT signed by a
 * key of its JWK Set; no secret, no Basic header. The assertion names the client (`iss`). Its
 * failures are not counted toward throttling: a signature cannot be guessed as a secret can.
 */
async function assertedClient(auth: AuthService, header: string | undefined, form: URLSearchParams) {
  if (header !== undefined || form.has('client_secret')) {
    throw oauth.invalidRequest('A request with a client_assertion authenticates the client by it alone: send no client_secret or Authorization header');
  }
  if (form.get('client_assertion_type') !== JWT_BEARER_ASSERTION) {
    throw oauth.invalidRequest(`client_assertion_type must be ${JWT_BEARER_ASSERTION}`);
  }
  const assertion = form.get('client_assertion');
  if (!assertion) throw oauth.invalidRequest('client_assertion is required with client_assertion_type');
  const id = auth.assertions.claimedClient(assertion);
  const named = form.get('client_id');
  if (named !== null && named !== id) throw oauth.invalidClient('client_id differs from the client assertion\'s iss');
  const found = isFhirId(id) ? await findClient(auth, id) : undefined;
  if (!found) throw oauth.invalidClient('The client assertion names no client application (iss)');
  await auth.assertions.verify(auth.db, assertion, found.client);
  return { id, found, basic: false };
}

async function passwordGrant(auth: AuthService, c: HonoContext, form: URLSearchParams, address: string): Promise<TokenResponse> {
  const email = form.get('username');
  const password = form.get('password');
  if (!email || !password) throw oauth.invalidRequest('username and password are required');
  const projectId = form.get('project') ?? undefined;
  const user = await checkPassword(auth, email, password, address, projectId);
  const membership = await chooseMembership(auth, `User/${user.id}`, projectId);
  const login = await auth.createLogin({
    authMethod: 'password',
    subject: `User/${user.id}`,
    membership,
    clientId: form.get('client_id') ?? undefined,
    scope: form.get('scope') ?? 'openid offline',
    remoteAddress: address,
    userAgent: c.req.header('user-agent'),
  });
  return auth.issueTokens(login, true, membership);
}

async function refreshGrant(auth: AuthService, form: URLSearchParams): Promise<TokenResponse> {
  const token = form.get('refresh_token');
  if (!token) throw oauth.invalidRequest('refresh_token is required');
  return auth.refresh(token, form.get('scope') ?? undefined);
}

/** Authorization code with PKCE S256 (RFC 7636): the code is `<loginId>.<secret>`, single use. */
async function authorizationCode(auth: AuthService, form: URLSearchParams): Promise<TokenResponse> {
  const code = form.get('code');
  const verifier = form.get('code_verifier');
  if (!code) throw oauth.invalidRequest('code is required');
  const match = /^([A-Za-z0-9-]{36})\.([0-9a-f]{64})$/.exec(code);
  const login = match ? await readAny(auth.db, 'Login', match[1]) : undefined;
  if (!match || !login || login.revoked || login.granted || !login.code || !safeEqual(sha256Base64Url(match[2]), login.code)) {
    throw oauth.invalidGrant('The authorization code is invalid, expired or already used');
  }
  if (loginAge(login) > 10 * 60_000) throw oauth.invalidGrant('The authorization code has expired');
  const clientId = form.get('client_id');
  const loginClient = parseReference(login.client?.reference)?.[1];
  if (loginClient && clientId && clientId !== loginClient) throw oauth.invalidGrant('The code was issued to another client');
  if (login.codeChallenge) {
    if (!verifier) throw oauth.invalidRequest('code_verifier is required (PKCE)');
    if (!safeEqual(sha256Base64Url(verifier), login.codeChallenge)) throw oauth.invalidGrant('code_verifier does not match the code_challenge');
  }
  try {
    return await auth.issueTokens(login, true);
  } catch (error) {
    if ((error as { status?: number }).status === 412) throw oauth.invalidGrant('The authorization code was already used');
    throw error;
  }
}

/**
 * Token exchange (SPEC 5 rule 10): the external access token is validated at the userinfo
 * endpoint of the ClientApplication's identity provider, then the user is found by email, or by
 * `sub` (= ProjectMembership.externalId) when the provider has `useSubject`.
 */
async function tokenExchange(auth: AuthService, form: URLSearchParams, c: HonoContext): Promise<TokenResponse> {
  const subjectToken = form.get('subject_token');
  const clientId = form.get('client_id');
  if (!subjectToken || !clientId) throw oauth.invalidRequest('subject_token and client_id are required');
  const type = form.get('subject_token_type');
  if (type && type !== ACCESS_TOKEN_TYPE) throw oauth.invalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  const client = isFhirId(clientId) ? await readAny(auth.db, 'ClientApplication', clientId) : undefined;
  const provider = client?.identityProvider;
  if (!client || !provider?.userInfoUrl) throw oauth.invalidClient('Unknown client, or it has no identity provider');
  let response: Response;
  try {
    response = await fetch(provider.userInfoUrl, { headers: { Authorization: `Bearer ${subjectToken}`, Accept: 'application/json' } });
  } catch {
    throw oauth.invalidGrant('The identity provider could not be reached');
  }
  if (!response.ok) throw oauth.invalidGrant(`The identity provider refused the token (status ${response.status})`);
  const userinfo = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  const projectId = client.meta!.project!;
  let memberships: ProjectMembership[];
  if (provider.useSubject) {
    if (typeof userinfo.sub !== 'string') throw oauth.invalidGrant('The identity provider returned no sub');
    memberships = await membershipsByExternalId(auth.db, userinfo.sub, projectId);
  } else {
    if (typeof userinfo.email !== 'string') throw oauth.invalidGrant('The identity provider returned no email');
    const user = await findUserByEmail(auth.db, userinfo.email, projectId);
    memberships = user ? (await membershipsReferencing(auth.db, 'user', `User/${user.id}`)).filter((m) => m.meta?.project === projectId) : [];
  }
  if (memberships.length !== 1) {
    throw oauth.invalidGrant(memberships.length === 0 ? 'No user of this project matches the external token' : 'Several memberships match the external token');
  }
  const subject = memberships[0].user?.reference;
  if (!subject) throw oauth.invalidGrant('The membership matching the external token has no user');
  const login = await auth.createLogin({
    authMethod: 'exchange',
    subject,
    membership: memberships[0],
    clientId,
    scope: form.get('scope') ?? 'openid',
    remoteAddress: clientAddress(c),
  });
  return auth.issueTokens(login, false, memberships[0]);
}
