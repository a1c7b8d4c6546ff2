import type { Database } from '../db/database.js';
import type { AccessPolicy, Login, LoginAuthMethod, LoginCodeChallengeMethod, Project, ProjectMembership } from '../fhir/resources.js';
import { grantScope } from './scope-grant.js';
import { TokenError } from './tokens.js';

/** What a sign-in records in its Login. */
export interface LoginRequest {
  authMethod: LoginAuthMethod;
  subject: string;
  membership: ProjectMembership;
  clientId?: string;
  scope?: string;
  remoteAddress?: string;
  userAgent?: string;
  codeChallenge?: string;
  codeChallengeMethod?: LoginCodeChallengeMethod;
}

/** A new Login of the membership's project, not yet stored (no id or meta). */
export function newLogin(request: LoginRequest, extra: Partial<Login>): Login {
  const projectId = request.membership.meta!.project!;
  return {
    resourceType: 'Login',
    authMethod: request.authMethod,
    authTime: new Date().toISOString(),
    user: { reference: request.subject },
    project: { reference: `Project/${projectId}` },
    membership: { reference: `ProjectMembership/${request.membership.id}` },
    ...(request.clientId ? { client: { reference: `ClientApplication/${request.clientId}` } } : {}),
    // A client signing in for itself (client credentials) acts in the system context; every other login acts for a user.
    scope: grantScope(request.scope ?? 'openid', request.authMethod === 'client' ? 'system' : 'user'),
    granted: false,
    revoked: false,
    admin: request.membership.admin === true,
    ...(request.remoteAddress ? { remoteAddress: request.remoteAddress } : {}),
    ...(request.userAgent ? { userAgent: request.userAgent.slice(0, 500) } : {}),
    ...(request.codeChallenge ? { codeChallenge: request.codeChallenge, codeChallengeMethod: request.codeChallengeMethod ?? 'S256' } : {}),
    ...extra,
  };
}

/** A Login with what an access token's identity is made of: its membership, project and policy. */
export interface LoginChain {
  login: Login | undefined;
  membership: ProjectMembership | undefined;
  project: Project | undefined;
  policy: AccessPolicy | undefined;
}

/** One statement: the Login, its membership, the membership's project and access policy. */
export async function readLoginChain(db: Database, loginId: string): Promise<LoginChain> {
  const rows = await db.query<{ login: string; membership: string | null; project: string | null; policy: string | null }>(
    `SELECT l.content::text AS login, m.content::text AS membership, p.content::text AS project, a.content::text AS policy
     FROM resource l
     LEFT JOIN resource m ON m."resourceType" = 'ProjectMembership' AND NOT m.deleted
       AND m.id = split_part(l.content->'membership'->>'reference', '/', 2)
     LEFT JOIN resource p ON p."resourceType" = 'Project' AND NOT p.deleted AND p.id = m."projectId"
     LEFT JOIN resource a ON a."resourceType" = 'AccessPolicy' AND NOT a.deleted
       AND a.id = split_part(m.content->'accessPolicy'->>'reference', '/', 2)
     WHERE l."resourceType" = 'Login' AND l.id = $1 AND NOT l.deleted`,
    [loginId],
  );
  const row = rows[0];
  const parsed = <T>(text: string | null | undefined) => (text ? (JSON.parse(text) as T) : undefined);
  return { login: parsed(row?.login), membership: parsed(row?.membership), project: parsed(row?.project), policy: parsed(row?.policy) };
}

/** `User/<id>` or `ClientApplication/<id>`: who signed in (every Login this server writes has it). */
export function subjectOf(login: Login): string {
  const subject = login.user?.reference;
  if (!subject) throw new TokenError('The login has no user: sign in again');
  return subject;
}

/** Milliseconds since the Login was made; a Login without `authTime` counts as expired. */
export function loginAge(login: Login): number {
  const time = login.authTime ? Date.parse(login.authTime) : NaN;
  return Number.isNaN(time) ? Infinity : Date.now() - time;
}
