import { jwtVerify, SignJWT } from 'jose';
import { errors } from '../fhir/outcome.js';
import type { ProjectMembership, User } from '../fhir/resources.js';
import { findUserInScope, membershipsReferencing } from './accounts.js';
import { prepareClientSecret, withAccountWrites } from './account-writes.js';
import { SUPER_ADMIN_PROJECT_ID } from './bootstrap.js';
import { SIGNING_ALGORITHM } from './keys.js';
import { checkPassword } from './logins.js';
import { oauth, OAuthError } from './oauth-errors.js';
import { checkAuthFields } from './request-fields.js';
import { hashSecret, randomSecret, sha256Base64Url } from './secrets.js';
import type { AuthService } from './service.js';
import { checkPatientSignUp, createPatientMembership } from './sign-up-patient.js';
import { ADDRESS_RULE } from './throttle.js';

/**
 * Self sign-up as Medplum's client does it: `/auth/newuser` makes the User and answers a partial
 * login; `/auth/newproject` turns it into a Project owned by that user, or, for a user signing up
 * to an existing project (`projectId`), `/auth/newpatient` into a patient of it
 * (sign-up-patient.ts); either answers a sign-in code.
 *
 * The partial login is a short signed token rather than a Login resource, because a Login belongs
 * to a membership and the new user has none until the project exists. Its own `typ` keeps it from
 * ever passing as an access token (those need `login_id` and `project` claims besides).
 */

const PARTIAL_LOGIN_TYPE = 'flint-sign-up+jwt';
const PARTIAL_LOGIN_SECONDS = 3600;
const MIN_PASSWORD_LENGTH = 8;

export interface NewUser {
  firstName: string;
  lastName: string;
  email: string;
  password: string;
  clientId?: string;
  /** The project a patient signs up to (Medplum's `projectId`); absent for a new project's owner. */
  projectId?: string;
  /** S256 challenge the final code is bound to (a plain one is hashed by the caller). */
  codeChallenge?: string;
  address: string;
}

/** What finishing a sign-up needs besides the partial login. */
export interface SignUpStep {
  login: string;
  address: string;
  userAgent?: string;
}

export interface NewProjectRequest extends SignUpStep {
  projectName: string;
}

export interface PartialLogin {
  sub: string;
  firstName: string;
  lastName: string;
  clientId?: string;
  codeChallenge?: string;
  /** Set when the user signed up to this project as a patient. */
  projectId?: string;
}

const emailTaken = () => errors.conflict('A user with this email already exists: sign in instead');

/**
 * Makes the User and answers `{login}`. A patient's User is kept in the project signed up to (as
 * Medplum scopes it), anyone else's in the Super Admin project, as server-wide users are. Signing
 * up again with the email and password of a user who never finished (no membership yet) resumes:
 * a new partial login for the same User, so an abandoned sign-up does not keep the email taken.
 */
export async function startNewUser(auth: AuthService, request: NewUser): Promise<{ login: string }> {
  const { firstName, lastName, email, password, clientId, codeChallenge, projectId } = request;
  checkAuthFields({ firstName, lastName, email, password, clientId, codeChallenge, projectId }, auth.config.authMaxFieldLength);
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw errors.invalid('"email" must be an email address', 'email');
  if (password.length < MIN_PASSWORD_LENGTH) throw errors.invalid(`"password" must be at least ${MIN_PASSWORD_LENGTH} characters`, 'password');
  // Each sign-up counts against its address, as failed sign-ins do: one address cannot mass-produce accounts.
  const addressKey = `sign-up:${request.address}`;
  const wait = auth.throttle.retryAfter(addressKey, ADDRESS_RULE);
  if (wait > 0) throw oauth.throttled(wait);
  if (projectId !== undefined) await checkPatientSignUp(auth, projectId, clientId);
  const existing = await findUserInScope(auth.db, email, projectId);
  const user = existing ? await resumeSignUp(auth, existing, request) : await createUser(auth, request);
  auth.throttle.fail(addressKey, ADDRESS_RULE);
  const names = existing ? { firstName: user.firstName ?? firstName, lastName: user.lastName ?? lastName } : { firstName, lastName };
  const claims: PartialLogin = { sub: `User/${user.id}`, ...names, clientId, codeChallenge, projectId };
  const login = await new SignJWT({ ...claims })
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: auth.keys.kid, typ: PARTIAL_LOGIN_TYPE })
    .setIssuer(auth.signer.issuer)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + PARTIAL_LOGIN_SECONDS)
    .sign(auth.keys.privateKey);
  return { login };
}

async function createUser(auth: AuthService, request: NewUser): Promise<User> {
  const { firstName, lastName, email, password, projectId } = request;
  // scrypt is slow: hash before the transaction opens.
  const passwordHash = await hashSecret(password);
  const home = projectId ?? SUPER_ADMIN_PROJECT_ID;
  return withAccountWrites(auth, async (writes) => {
    const fields = { firstName, lastName, ...(projectId ? { project: { reference: `Project/${projectId}` } } : {}) };
    const { user, created } = await writes.userByEmail(email, home, fields);
    if (!created) throw emailTaken();
    await writes.storePasswordHash(user.id, home, passwordHash);
    return user;
  });
}

/**
 * The User of an unfinished sign-up, when this is its owner coming back: no membership yet, the
 * same kind of sign-up (a patient of the same project, or not a patient), and the right password
 * (checked, and throttled, as a sign-in is). Anything else is the 409 an email in use always gets.
 */
async function resumeSignUp(auth: AuthService, user: User, request: NewUser): Promise<User> {
  if ((await membershipsReferencing(auth.db, 'user', `User/${user.id}`)).length > 0) throw emailTaken();
  const scope = request.projectId ? `Project/${request.projectId}` : undefined;
  if (user.project?.reference !== scope) throw emailTaken();
  try {
    await checkPassword(auth, request.email, request.password, request.address, request.projectId);
  } catch (error) {
    if (error instanceof OAuthError && error.status !== 429) throw emailTaken();
    throw error;
  }
  return user;
}

/** Makes the Project (owner's admin membership, default client) and answers `{login, code}`. */
export async function startNewProject(auth: AuthService, request: NewProjectRequest): Promise<{ login: string; code: string }> {
  const name = request.projectName.trim();
  if (name === '') throw errors.invalid('"projectName" must be a non-empty string', 'projectName');
  checkAuthFields({ projectName: name }, auth.config.authMaxFieldLength);
  const partial = await readPartialLogin(auth, request.login);
  if (partial.projectId) throw errors.invalid(`This sign-up is for a patient of project ${partial.projectId}: finish it with /auth/newpatient`, 'login');
  const userId = partial.sub.slice('User/'.length);
  const secret = await prepareClientSecret(auth);
  const created = await withAccountWrites(auth, (writes) =>
    writes.createProject({ name, owner: { userId, firstName: partial.firstName, lastName: partial.lastName } }, secret),
  );
  return signUpCode(auth, partial, created.ownerMembership!, request);
}

export interface NewPatientRequest extends SignUpStep {
  projectId: string;
}

/** Makes the user a patient of the project signed up to (MedplumClient.startNewPatient) and answers `{login, code}`. */
export async function startNewPatient(auth: AuthService, request: NewPatientRequest): Promise<{ login: string; code: string }> {
  const partial = await readPartialLogin(auth, request.login);
  if (!partial.projectId) throw errors.invalid('This sign-up was not to a project: send "projectId" to /auth/newuser to sign up as a patient', 'login');
  if (partial.projectId !== request.projectId) throw errors.invalid('"projectId" is not the project this sign-up was started for', 'projectId');
  const user = { id: partial.sub.slice('User/'.length), firstName: partial.firstName, lastName: partial.lastName };
  const membership = await withAccountWrites(auth, (writes) => createPatientMembership(writes, request.projectId, user));
  return signUpCode(auth, partial, membership, request);
}

/** The Login of a finished sign-up and its code for the token endpoint (bound to the sign-up's PKCE challenge). */
export async function signUpCode(
  auth: AuthService,
  partial: PartialLogin,
  membership: ProjectMembership,
  request: SignUpStep,
): Promise<{ login: string; code: string }> {
  const codeSecret = randomSecret();
  const login = await auth.createLogin(
    {
      authMethod: 'password',
      subject: partial.sub,
      membership,
      clientId: partial.clientId,
      scope: 'openid offline',
      remoteAddress: request.address,
      userAgent: request.userAgent,
      codeChallenge: partial.codeChallenge,
      codeChallengeMethod: partial.codeChallenge ? 'S256' : undefined,
    },
    { code: sha256Base64Url(codeSecret) },
  );
  return { login: login.id!, code: `${login.id}.${codeSecret}` };
}

export async function readPartialLogin(auth: AuthService, token: string): Promise<PartialLogin> {
  const refused = () => errors.invalid('"login" must be the login answered by /auth/newuser within the hour', 'login');
  try {
    const { payload, protectedHeader } = await jwtVerify(token, auth.keys.publicKeys.get(auth.keys.kid)!, {
      algorithms: [SIGNING_ALGORITHM],
      issuer: auth.signer.issuer,
      typ: PARTIAL_LOGIN_TYPE,
      requiredClaims: ['exp', 'sub'],
    });
    if (protectedHeader.typ !== PARTIAL_LOGIN_TYPE || typeof payload.sub !== 'string' || !payload.sub.startsWith('User/')) throw refused();
    return payload as unknown as PartialLogin;
  } catch {
    throw refused();
  }
}
