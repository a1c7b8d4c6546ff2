import { startNewProject, startNewUser } from '../../auth/sign-up.js';
import { errors } from '../../fhir/outcome.js';
import type { HonoContext } from '../route.js';
import { asOutcome, loginCodeChallenge } from './endpoints.js';
import { clientAddress } from './token-endpoint.js';

/**
 * `POST /auth/newuser` (MedplumClient.startNewUser): a new User with a password; answers
 * `{login}`, a partial login for `/auth/newproject`. `recaptchaToken` is ignored: Flint has no
 * reCAPTCHA; sign-ups are limited per address instead. Only with ALLOW_SIGN_UP=true.
 */
export async function newUserHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  refuseWhenSignUpOff(c);
  const body = await jsonObject(c, 'firstName, lastName, email and password');
  if (body.projectId !== undefined) throw errors.invalid('Joining an existing project by sign-up is not supported: ask its admins for an invite', 'projectId');
  const answer = await asOutcome(() =>
    startNewUser(auth, {
      firstName: requiredString(body, 'firstName'),
      lastName: requiredString(body, 'lastName'),
      email: requiredString(body, 'email'),
      password: requiredString(body, 'password'),
      clientId: optionalString(body, 'clientId'),
      codeChallenge: loginCodeChallenge(optionalString(body, 'codeChallenge'), optionalString(body, 'codeChallengeMethod')),
      address: clientAddress(c),
    }),
  );
  return Response.json(answer, { headers: { 'Cache-Control': 'no-store' } });
}

/**
 * `POST /auth/newproject` (MedplumClient.startNewProject, JSON: login, projectName): a Project owned
 * by the new user, who is its admin; answers `{login, code}` for the token endpoint, as /auth/login does.
 */
export async function newProjectHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  refuseWhenSignUpOff(c);
  const body = await jsonObject(c, 'login and projectName');
  const answer = await startNewProject(auth, {
    login: requiredString(body, 'login'),
    projectName: requiredString(body, 'projectName'),
    address: clientAddress(c),
    userAgent: c.req.header('user-agent'),
  });
  return Response.json(answer, { headers: { 'Cache-Control': 'no-store' } });
}

function refuseWhenSignUpOff(c: HonoContext): void {
  if (!c.get('services').config.allowSignUp) throw errors.notFound('Sign-up is not enabled on this server (ALLOW_SIGN_UP)');
}

async function jsonObject(c: HonoContext, expected: string): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw errors.invalid(`Send a JSON object with ${expected}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw errors.invalid(`Send a JSON object with ${expected}`);
  return body as Record<string, unknown>;
}

function requiredString(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (typeof value !== 'string' || value.trim() === '') throw errors.invalid(`"${name}" must be a non-empty string`, name);
  return value;
}

function optionalString(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw errors.invalid(`"${name}" must be a string`, name);
  return value;
}
