import { isFhirId } from '../../fhir/ids.js';
import type { HonoContext } from '../route.js';
import { errors, issue, outcome, OperationOutcomeError } from '../../fhir/outcome.js';
import { parseReference, readAny } from '../../auth/accounts.js';
import { authenticateRequest, bearerToken, unauthorized } from '../../auth/authenticate.js';
import { checkPassword, chooseMembership } from '../../auth/logins.js';
import { oauth, OAuthError } from '../../auth/oauth-errors.js';
import { checkAuthFields } from '../../auth/request-fields.js';
import { randomSecret, sha256Base64Url } from '../../auth/secrets.js';
import type { AuthService } from '../../auth/service.js';
import { clientAddress } from '../client-address.js';
import { jsonObject } from './json-object.js';
import { TokenError } from '../../auth/tokens.js';
import { SIGNING_ALGORITHM } from '../../auth/keys.js';
import { grantScope } from '../../auth/scope-grant.js';
import { SMART_CAPABILITIES, SMART_SCOPES_SUPPORTED } from '../../auth/smart-discovery.js';
import { bindLaunch, launchProject, usableLaunch } from '../../auth/launches.js';
import type { ClientApplication, ProjectMembership, SmartAppLaunch } from '../../fhir/resources.js';
import { ASSERTION_ALGORITHMS } from '../../auth/client-assertion.js';

const GRANT_TYPES = [
  'client_credentials',
  'password',
  'authorization_code',
  'refresh_token',
  'urn:ietf:params:oauth:grant-type:token-exchange',
];

export async function jwksHandler(c: HonoContext): Promise<Response> {
  return Response.json(c.get('services').auth.keys.jwks, { headers: { 'Cache-Control': 'public, max-age=3600' } });
}

/** OpenID Connect discovery (OpenID Connect Discovery 1.0, section 3). */
export async function openidConfigurationHandler(c: HonoContext): Promise<Response> {
  const base = c.get('services').config.baseUrl;
  return Response.json({
    issuer: base,
    authorization_endpoint: `${base}oauth2/authorize`,
    token_endpoint: `${base}oauth2/token`,
    userinfo_endpoint: `${base}oauth2/userinfo`,
    end_session_endpoint: `${base}oauth2/logout`,
    jwks_uri: `${base}.well-known/jwks.json`,
    response_types_supported: ['code'],
    grant_types_supported: GRANT_TYPES,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALGORITHM],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: ['openid', 'offline', 'profile', 'email', 'system/*.*', 'user/*.*'],
    claims_supported: ['iss', 'sub', 'exp', 'iat', 'login_id', 'profile', 'project', 'scope', 'client_id', 'fhirUser'],
  });
}

/** SMART App Launch discovery (`/.well-known/smart-configuration`). */
export async function smartConfigurationHandler(c: HonoContext): Promise<Response> {
  const base = c.get('services').config.baseUrl;
  return Response.json({
    issuer: base,
    jwks_uri: `${base}.well-known/jwks.json`,
    authorization_endpoint: `${base}oauth2/authorize`,
    token_endpoint: `${base}oauth2/token`,
    userinfo_endpoint: `${base}oauth2/userinfo`,
    grant_types_supported: GRANT_TYPES,
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
    scopes_supported: SMART_SCOPES_SUPPORTED,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    capabilities: SMART_CAPABILITIES,
  });
}

/**
 * `GET /oauth2/userinfo`: with our token, the caller's claims; with a configured external IDP's
 * JWT (SPEC 4.2, 5), the user's claims plus our credentials scoped to the matched membership.
 */
export async function userinfoHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  const token = bearerToken(c.req.raw);
  if (auth.external.providerOf(token)) return externalUserinfo(auth, token);
  const identity = await authenticateRequest(auth, c.req.raw, () => clientAddress(c));
  return Response.json(await claimsOf(auth, identity.subject, identity.profile), { headers: { 'Cache-Control': 'no-store' } });
}

async function externalUserinfo(auth: AuthService, token: string): Promise<Response> {
  let result;
  try {
    result = await auth.external.validate(auth, token);
  } catch (error) {
    if (error instanceof TokenError) throw unauthorized(error.message, true);
    throw error;
  }
  const subject = result.membership.user?.reference;
  if (!result.credentials) {
    if (!subject) throw unauthorized('The membership matching this token has no user', true);
    const login = await auth.createLogin({
      authMethod: 'external',
      subject,
      membership: result.membership,
      scope: 'openid',
    });
    result.credentials = await auth.issueTokens(login, false);
    await auth.external.shareCredentials(token, result);
  }
  const claims = await claimsOf(auth, subject, result.membership.profile?.reference, result.claims);
  const credentials = result.credentials;
  return Response.json(
    { ...claims, ...credentials, expires_in: Math.max(0, Math.min(credentials.expires_in, Math.floor((result.until - Date.now()) / 1000))) },
    { headers: { 'Cache-Control': 'no-store' } },
  );
}

/** OIDC claims of a user: sub, fhirUser, name and email where known. */
async function claimsOf(
  auth: AuthService,
  subject: string | undefined,
  profile: string | undefined,
  external: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const ref = parseReference(subject);
  const claims: Record<string, unknown> = { sub: typeof external.sub === 'string' ? external.sub : ref?.[1] ?? subject };
  if (profile) {
    claims.fhirUser = `${auth.config.fhirBaseUrl}/${profile}`;
    claims.profile = profile;
  }
  if (ref?.[0] === 'User') {
    const user = await readAny(auth.db, 'User', ref[1]);
    if (user) {
      const name = [user.firstName, user.lastName].filter((part) => typeof part === 'string').join(' ');
      if (name) claims.name = name;
      if (typeof user.firstName === 'string') claims.given_name = user.firstName;
      if (typeof user.lastName === 'string') claims.family_name = user.lastName;
      if (typeof user.email === 'string') claims.email = user.email;
    }
  } else if (ref?.[0] === 'ClientApplication') {
    const client = await readAny(auth.db, 'ClientApplication', ref[1]);
    if (typeof client?.name === 'string') claims.name = client.name;
  }
  for (const key of ['name', 'email'] as const) if (claims[key] === undefined && typeof external[key] === 'string') claims[key] = external[key];
  return claims;
}

/** `POST /oauth2/logout`: revokes the Login behind the token (its refresh token and access tokens). */
export async function logoutHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  const identity = c.get('ctx').identity;
  if (!identity.loginId) throw errors.invalid('This token has no login to end');
  const login = await readAny(auth.db, 'Login', identity.loginId);
  if (login && !login.revoked) await auth.revoke(login);
  return Response.json({ ok: true });
}

/**
 * `POST /auth/login` (JSON: email, password, optional projectId, clientId, codeChallenge,
 * codeChallengeMethod S256 or plain, scope, launch): checks the password and answers `{login, code}`; the code goes
 * to `/oauth2/token` with `grant_type=authorization_code` and the PKCE `code_verifier`.
 */
export async function loginHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  const body = await jsonObject(c, 'email and password');
  const str = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : undefined);
  const email = str('email');
  const password = str('password');
  if (!email || !password) throw errors.invalid('email and password are required');
  const code = await asOutcome(() =>
    issueCode(auth, email, password, {
      projectId: str('projectId'),
      clientId: str('clientId'),
      codeChallenge: loginCodeChallenge(str('codeChallenge'), str('codeChallengeMethod')),
      scope: str('scope'),
      launch: str('launch'),
      address: clientAddress(c),
      userAgent: c.req.header('user-agent'),
    }),
  );
  return Response.json(code, { headers: { 'Cache-Control': 'no-store' } });
}

/** RFC 7636 4.1: what a code verifier (and so a `plain` challenge) may be. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/**
 * The S256 challenge a /auth/login code is bound to. `plain` is accepted here, and only here,
 * because Medplum's client falls back to it where it cannot hash (outside browsers): the code goes
 * back in this same response, never through a redirect, so there is nothing to intercept. A plain
 * challenge is the verifier itself, so its S256 hash is what the token endpoint then checks.
 * /oauth2/authorize stays S256 only (SMART App Launch).
 */
export function loginCodeChallenge(challenge: string | undefined, method: string | undefined): string | undefined {
  if (method !== undefined && method !== 'S256' && method !== 'plain') throw errors.invalid('codeChallengeMethod must be S256 or plain');
  if (method !== 'plain' || challenge === undefined) return challenge;
  if (!CODE_VERIFIER.test(challenge)) throw errors.invalid('A plain codeChallenge must be 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_", "~"');
  return sha256Base64Url(challenge);
}

interface CodeRequest {
  projectId?: string;
  clientId?: string;
  codeChallenge?: string;
  scope?: string;
  /** A SmartAppLaunch id (EHR launch): the Login's tokens carry its patient and encounter. */
  launch?: string;
  address: string;
  userAgent?: string;
  /** The client application `clientId` names, when the caller has read it already. */
  client?: ClientApplication;
}

async function issueCode(auth: AuthService, email: string, password: string, request: CodeRequest): Promise<{ login: string; code: string }> {
  const { projectId, clientId, codeChallenge, scope } = request;
  checkAuthFields({ email, password, projectId, clientId, codeChallenge, scope, launch: request.launch }, auth.config.authMaxFieldLength);
  const launch = request.launch !== undefined ? await usableLaunch(auth.db, request.launch) : undefined;
  if (launch && projectId && projectId !== launchProject(launch)) throw oauth.invalidRequest('The launch was made in another project than the one named');
  const user = await checkPassword(auth, email, password, request.address, await signInProject(auth, request, launch));
  const membership = launch ? await launchMembership(auth, `User/${user.id}`, launch) : await chooseMembership(auth, `User/${user.id}`, projectId);
  if (launch) await bindLaunch(auth.db, launch);
  const secret = randomSecret();
  const login = await auth.createLogin(
    {
      authMethod: 'password',
      subject: `User/${user.id}`,
      membership,
      clientId: request.clientId,
      scope: request.scope ?? 'openid offline',
      remoteAddress: request.address,
      userAgent: request.userAgent,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallenge ? 'S256' : undefined,
    },
    { code: sha256Base64Url(secret), ...(launch ? { launch: { reference: `SmartAppLaunch/${launch.id}` } } : {}) },
  );
  return { login: login.id!, code: `${login.id}.${secret}` };
}

/**
 * The project whose scoped User an email names at sign-in (findUserByEmail), as Medplum takes it:
 * the one named, else the launch's, else the client application's.
 */
async function signInProject(auth: AuthService, request: CodeRequest, launch: SmartAppLaunch | undefined): Promise<string | undefined> {
  if (request.projectId) return request.projectId;
  if (launch) return launchProject(launch);
  const client = request.client ?? (request.clientId && isFhirId(request.clientId) ? await readAny(auth.db, 'ClientApplication', request.clientId) : undefined);
  return client?.meta?.project;
}

/** The user's membership in the project a launch was made in; no other project's launch is usable. */
async function launchMembership(auth: AuthService, subject: string, launch: SmartAppLaunch): Promise<ProjectMembership> {
  try {
    return await chooseMembership(auth, subject, launchProject(launch));
  } catch (error) {
    if (error instanceof OAuthError) throw oauth.invalidRequest('The launch was made in a project you are not a member of');
    throw error;
  }
}

/** OAuth errors of shared login steps, as OperationOutcomes for the JSON API. */
export async function asOutcome<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof OAuthError) {
      const code = error.status === 429 ? 'throttled' : error.error === 'invalid_grant' ? 'login' : 'invalid';
      const status = error.status === 429 ? 429 : error.error === 'invalid_grant' ? 401 : 400;
      throw new OperationOutcomeError(outcome([issue(code, error.description)]), status, error.headers);
    }
    throw error;
  }
}

/**
 * `GET /oauth2/authorize` (browser apps): checks the client, redirect URI and PKCE challenge,
 * then shows a sign-in form that posts back here; `POST` checks the password and redirects to
 * `redirect_uri?code=...&state=...`.
 */
export async function authorizeHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  const params = c.req.method === 'GET' ? new URL(c.req.url).searchParams : new URLSearchParams(await c.req.text());
  const clientId = params.get('client_id') ?? '';
  const redirectUri = params.get('redirect_uri') ?? '';
  const client = isFhirId(clientId) ? await readAny(auth.db, 'ClientApplication', clientId) : undefined;
  if (!client) throw errors.invalid('client_id names no client application');
  const allowed = [client.redirectUri, ...(client.redirectUris ?? [])].filter(Boolean);
  if (!allowed.includes(redirectUri)) throw errors.invalid('redirect_uri is not registered for this client application');
  const back = (query: Record<string, string>) => {
    const url = new URL(redirectUri);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const state = params.get('state');
    if (state) url.searchParams.set('state', state);
    return new Response(null, { status: 302, headers: { Location: url.toString(), 'Cache-Control': 'no-store' } });
  };
  if (params.get('response_type') !== 'code') return back({ error: 'unsupported_response_type' });
  const challenge = params.get('code_challenge');
  if (!challenge && client.pkceOptional !== true) return back({ error: 'invalid_request', error_description: 'code_challenge is required' });
  if (challenge && (params.get('code_challenge_method') ?? 'S256') !== 'S256') {
    return back({ error: 'invalid_request', error_description: 'code_challenge_method must be S256' });
  }
  const scopeProblem = requestedScopeProblem(params.get('scope'));
  if (scopeProblem) return back({ error: 'invalid_scope', error_description: scopeProblem });
  const launchId = params.get('launch') ?? undefined;
  if (c.req.method === 'GET') {
    // An unknown or expired launch is told to the app at once, before anyone signs in.
    if (launchId !== undefined) {
      try {
        await usableLaunch(auth.db, launchId);
      } catch (error) {
        if (error instanceof OAuthError) return back({ error: error.error, error_description: error.description });
        throw error;
      }
    }
    return loginForm(params);
  }
  try {
    const { code } = await issueCode(auth, params.get('email') ?? '', params.get('password') ?? '', {
      projectId: params.get('project') ?? undefined,
      clientId,
      codeChallenge: challenge ?? undefined,
      scope: params.get('scope') ?? undefined,
      launch: launchId,
      address: clientAddress(c),
      userAgent: c.req.header('user-agent'),
      client,
    });
    return back({ code });
  } catch (error) {
    if (error instanceof OAuthError) {
      if (error.status === 429) return loginForm(params, error.description, 429, error.headers);
      // With a launch, the project is the launch's: such a refusal is about the launch, for the app to handle.
      if (launchId !== undefined && error.error === 'invalid_request') return back({ error: error.error, error_description: error.description });
      return loginForm(params, error.description, 401);
    }
    throw error;
  }
}

/** Why a requested scope cannot be granted, before the user signs in (RFC 6749 4.1.2.1). */
function requestedScopeProblem(scope: string | null): string | undefined {
  if (scope === null) return undefined;
  try {
    grantScope(scope, 'user');
    return undefined;
  } catch (error) {
    if (error instanceof OAuthError) return error.description;
    throw error;
  }
}

const escape = (value: string) =>
  value.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

function loginForm(params: URLSearchParams, message?: string, status = 200, headers: Record<string, string> = {}): Response {
  const hidden = [...params]
    .filter(([name]) => !['email', 'password'].includes(name))
    .map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`)
    .join('');
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in to Flint</title></head><body>
<form method="post">${hidden}<h1>Sign in</h1>${message ? `<p role="alert">${escape(message)}</p>` : ''}
<label>Email <input name="email" type="email" autocomplete="username" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<label>Project (when you belong to several) <input name="project"></label>
<button type="submit">Sign in</button></form></body></html>`;
  return new Response(html, {
    status,
    headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'X-Frame-Options': 'DENY', ...headers },
  });
}
