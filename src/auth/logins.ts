import type { ProjectMembership, User } from '../fhir/resources.js';
import { findUserByEmail, membershipsReferencing, parseReference, readCredential } from './accounts.js';
import { oauth, OAuthError } from './oauth-errors.js';
import { verifySecret } from './secrets.js';
import type { AuthService } from './service.js';
import { ACCOUNT_RULE, ADDRESS_RULE } from './throttle.js';

/**
 * Checks an email and password, slowing repeated failures per account and per address
 * (429 with Retry-After). Unknown emails and wrong passwords get the same answer. `projectId`
 * picks the User of that project's scope first (findUserByEmail). The account is the User the
 * email means there, not the email: a patient account's failures must not lock out the
 * practitioner (server-wide User) with the same email, nor the other way round.
 */
export async function checkPassword(auth: AuthService, email: string, password: string, address: string, projectId?: string): Promise<User> {
  const addressKey = `address:${address}`;
  const addressWait = auth.throttle.retryAfter(addressKey, ADDRESS_RULE);
  if (addressWait > 0) throw oauth.throttled(addressWait);
  const user = email ? await findUserByEmail(auth.db, email, projectId) : undefined;
  const accountKey = user ? `account:User/${user.id}` : `account:${projectId ?? ''}:${email.toLowerCase()}`;
  const accountWait = auth.throttle.retryAfter(accountKey, ACCOUNT_RULE);
  if (accountWait > 0) throw oauth.throttled(accountWait);
  const credential = user ? await readCredential(auth.db, `User/${user.id}`) : undefined;
  if (!user || !credential || !(await verifySecret(password, credential.hash))) {
    auth.throttle.fail(accountKey, ACCOUNT_RULE);
    auth.throttle.fail(addressKey, ADDRESS_RULE);
    throw oauth.invalidGrant('Email or password is incorrect');
  }
  auth.throttle.clear(accountKey);
  return user;
}

/**
 * The membership a user logs in through: the one of `projectId`, or the only one they have. A
 * membership is of the project that stores it, which its `project` (when given) must name too: one
 * stored elsewhere before writes were held to that would otherwise land a sign-in naming one
 * project in another.
 */
export async function chooseMembership(auth: AuthService, subject: string, projectId: string | undefined): Promise<ProjectMembership> {
  const memberships = await membershipsReferencing(auth.db, 'user', subject);
  if (projectId) {
    const match = memberships.find((m) => m.meta?.project === projectId && (m.project?.reference === undefined || parseReference(m.project.reference)?.[1] === projectId));
    if (!match) throw oauth.invalidRequest(`You are not a member of project ${projectId}`);
    return match;
  }
  if (memberships.length === 0) throw oauth.invalidGrant('This account is not a member of any project');
  if (memberships.length > 1) {
    const projects = memberships.map((m) => m.meta?.project).join(', ');
    throw new OAuthError(400, 'invalid_request', `This account belongs to several projects: send "project" (one of ${projects})`);
  }
  return memberships[0];
}
