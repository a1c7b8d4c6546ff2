import { startNewPatient, startNewProject, startNewUser, type SignUpStep } from '../../auth/sign-up.js';
import type { AuthService } from '../../auth/service.js';
import { errors } from '../../fhir/outcome.js';
import type { HonoContext } from '../route.js';
import { asOutcome, loginCodeChallenge } from './endpoints.js';
import { jsonObject } from './json-object.js';
import { clientAddress } from '../client-address.js';

/**
 * `POST /auth/newuser` (MedplumClient.startNewUser): a new User with a password; answers
 * `{login}`, a partial login for `/auth/newproject` or, with `projectId` (a patient signing up to
 * that project), `/auth/newpatient`. `recaptchaToken` is ignored: Flint has no reCAPTCHA;
 * sign-ups are limited per address instead. Only with ALLOW_SIGN_UP=true.
 */
export async function newUserHandler(c: HonoContext): Promise<Response> {
  const auth = c.get('services').auth;
  refuseWhenSignUpOff(c);
  const body = await jsonObject(c, 'firstName, lastName, email and password');
  // Medplum's registration form sends "new" for a user who will make a project.
  const projectId = optionalString(body, 'projectId');
  const answer = await asOutcome(() =>
    startNewUser(auth, {
      firstName: requiredString(body, 'firstName'),
      lastName: requiredString(body, 'lastName'),
      email: requiredString(body, 'email'),
      password: requiredString(body, 'password'),
      // Medplum's client sends its own clientId, "" when it was made without one.
      clientId: optionalString(body, 'clientId') || undefined,
      projectId: projectId === 'new' ? undefined : projectId,
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
  return finishSignUp(c, 'projectName', (auth, step, value) => startNewProject(auth, { ...step, projectName: value }));
}

/**
 * `POST /auth/newpatient` (MedplumClient.startNewPatient, JSON: login, projectId): the user becomes
 * a patient of the project (a Patient profile, a membership with the project's
 * defaultPatientAccessPolicy); answers `{login, code}` as /auth/newproject does.
 */
export async function newPatientHandler(c: HonoContext): Promise<Response> {
  return finishSignUp(c, 'projectId', (auth, step, value) => startNewPatient(auth, { ...step, projectId: value }));
}

/** The second step of a sign-up: the partial login and one more field of the JSON body, answered `{login, code}`. */
async function finishSignUp(
  c: HonoContext,
  field: string,
  finish: (auth: AuthService, step: SignUpStep, value: string) => Promise<{ login: string; code: string }>,
): Promise<Response> {
  refuseWhenSignUpOff(c);
  const body = await jsonObject(c, `login and ${field}`);
  const step = { login: requiredString(body, 'login'), address: clientAddress(c), userAgent: c.req.header('user-agent') };
  const answer = await finish(c.get('services').auth, step, requiredString(body, field));
  return Response.json(answer, { headers: { 'Cache-Control': 'no-store' } });
}

function refuseWhenSignUpOff(c: HonoContext): void {
  if (!c.get('services').config.allowSignUp) throw errors.notFound('Sign-up is not enabled on this server (ALLOW_SIGN_UP)');
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
