import { jwtVerify, SignJWT } from 'jose';
import { errors } from '../fhir/outcome.js';
import { prepareClientSecret, withAccountWrites } from './account-writes.js';
import { SUPER_ADMIN_PROJECT_ID } from './bootstrap.js';
import { SIGNING_ALGORITHM } from './keys.js';
import { oauth } from './oauth-errors.js';
import { checkAuthFields } from './request-fields.js';
import { hashSecret, randomSecret, sha256Base64Url } from './secrets.js';
import type { AuthService } from './service.js';
import { ADDRESS_RULE } from './throttle.js';

/**
 * Self sign-up as Medplum's client does it: `/auth/newuser` makes the User and answers a partial
 * login, `/auth/newproject` turns it into a Project owned by that user and a sign-in code.
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
  /** S256 challenge the final code is bound to (a plain one is hashed by the caller). */
  codeChallenge?: string;
  address: string;
}

export interface NewProjectRequest {
  login: string;
  projectName: string;
  address: string;
  userAgent?: string;
}

interface PartialLogin {
  sub: string;
  firstName: string;
  lastName: string;
  clientId?: string;
  codeChallenge?: string;
}

/** Makes the User (in the Super Admin project, as server-wide users are) and answers `{login}`. */
export async function startNewUser(auth: AuthService, request: NewUser): Promise<{ login: string }> {
  const { firstName, lastName, email, password, clientId, codeChallenge } = request;
  checkAuthFields({ firstName, lastName, email, password, clientId, codeChallenge }, auth.config.authMaxFieldLength);
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw errors.invalid('"email" must be an email address', 'email');
  if (password.length < MIN_PASSWORD_LENGTH) throw errors.invalid(`"password" must be at least ${MIN_PASSWORD_LENGTH} characters`, 'password');
  // Each sign-up counts against its address, as failed sign-ins do: one address cannot mass-produce accounts.
  const addressKey = `sign-up:${request.address}`;
  const wait = auth.throttle.retryAfter(addressKey, ADDRESS_RULE);
  if (wait > 0) throw oauth.throttled(wait);
  // scrypt is slow: hash before the transaction opens.
  const passwordHash = await hashSecret(password);
  const user = await withAccountWrites(auth, async (writes) => {
    const { user, created } = await writes.userByEmail(email, SUPER_ADMIN_PROJECT_ID, { firstName, lastName });
    if (!created) throw errors.conflict('A user with this email already exists: sign in instead');
    await writes.storePasswordHash(user.id, SUPER_ADMIN_PROJECT_ID, passwordHash);
    return user;
  });
  auth.throttle.fail(addressKey, ADDRESS_RULE);
  const claims: PartialLogin = { sub: `User/${user.id}`, firstName, lastName, clientId, codeChallenge };
  const login = await new SignJWT({ ...claims })
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: auth.keys.kid, typ: PARTIAL_LOGIN_TYPE })
    .setIssuer(auth.signer.issuer)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + PARTIAL_LOGIN_SECONDS)
    .sign(auth.keys.privateKey);
  return { login };
}

/** Makes the Project (owner's admin membership, default client) and answers `{login, code}`. */
export async function startNewProject(auth: AuthService, request: NewProjectRequest): Promise<{ login: string; code: string }> {
  const name = request.projectName.trim();
  if (name === '') throw errors.invalid('"projectName" must be a non-empty string', 'projectName');
  checkAuthFields({ projectName: name }, auth.config.authMaxFieldLength);
  const partial = await readPartialLogin(auth, request.login);
  const userId = partial.sub.slice('User/'.length);
  const secret = await prepareClientSecret(auth);
  const created = await withAccountWrites(auth, (writes) =>
    writes.createProject({ name, owner: { userId, firstName: partial.firstName, lastName: partial.lastName } }, secret),
  );
  const membership = created.ownerMembership!;
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

async function readPartialLogin(auth: AuthService, token: string): Promise<PartialLogin> {
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
