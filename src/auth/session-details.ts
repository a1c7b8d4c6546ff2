import type { Identity } from '../identity/identity.js';
import type { AccessPolicy, Login, Project, ProjectMembership, ResourceType, User, UserConfiguration } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { SqlExecutor } from '../db/database.js';
import { parseReference, readAny } from './accounts.js';
import { policyForMember } from './membership-identity.js';

/**
 * What `GET /auth/me` answers: the signed-in caller as Medplum's client (`@medplum/core`
 * MedplumClient's SessionDetails) reads it after every login. The project, membership and user are
 * cut down to the fields the client uses; the profile is the whole resource, without secrets.
 */
export interface SessionDetails {
  user?: Pick<User, 'resourceType' | 'id' | 'email' | 'identifier'>;
  project: Pick<Project, 'resourceType' | 'id' | 'name' | 'description' | 'strictMode' | 'superAdmin'>;
  membership: Pick<ProjectMembership, 'resourceType' | 'id' | 'identifier' | 'user' | 'profile' | 'admin'>;
  profile: Resource;
  config: UserConfiguration;
  accessPolicy?: AccessPolicy;
  security?: UserSecurity;
}

/** A User's own security overview: whether MFA is on, and the sessions of the last hour. */
export interface UserSecurity {
  mfaEnrolled: boolean;
  sessions: UserSession[];
}

export interface UserSession {
  id: string;
  lastUpdated: string;
  authMethod?: string;
  remoteAddress?: string;
  userAgent?: string;
}

/** Sessions are the caller's Logins updated (signed in or refreshed) within this window. */
const SESSION_WINDOW_MS = 3600_000;
const MAX_SESSIONS = 20;

/**
 * Fields of a profile that must never leave the server through /auth/me: a ClientApplication
 * signed in by client credentials is its own profile, and its secrets are not the caller's to see
 * again.
 */
const SECRET_FIELDS = ['secret', 'retiringSecret', 'passwordHash'];

/**
 * The session details of an authenticated caller, read as the system (the caller may not be
 * allowed to read its own membership or project through its AccessPolicy). Undefined when the
 * membership or its profile no longer exists.
 */
export async function sessionDetails(db: SqlExecutor, identity: Identity): Promise<SessionDetails | undefined> {
  const membership = identity.membershipId ? await readAny(db, 'ProjectMembership', identity.membershipId) : undefined;
  const profileRef = parseReference(membership?.profile?.reference ?? identity.profile);
  const [project, profile] = await Promise.all([
    readAny(db, 'Project', identity.projectId),
    profileRef ? readAny(db, profileRef[0] as ResourceType, profileRef[1]) : undefined,
  ]);
  if (!membership || !project || !profile) return undefined;
  const userRef = parseReference(membership.user?.reference);
  // Only a User has an email, MFA and sessions; a ClientApplication's login has no user part.
  const user = userRef?.[0] === 'User' ? await readAny(db, 'User', userRef[1]) : undefined;
  const [config, accessPolicy, sessions] = await Promise.all([
    userConfiguration(db, project, membership),
    accessPolicyOf(db, membership),
    user ? recentSessions(db, identity.projectId, user.id!) : undefined,
  ]);
  return {
    user: user ? { resourceType: 'User', id: user.id, email: user.email, identifier: user.identifier } : undefined,
    project: {
      resourceType: 'Project',
      id: project.id,
      name: project.name,
      description: project.description,
      strictMode: project.strictMode,
      superAdmin: project.superAdmin,
    },
    membership: {
      resourceType: 'ProjectMembership',
      id: membership.id,
      identifier: membership.identifier,
      user: membership.user,
      profile: membership.profile,
      admin: membership.admin,
    },
    profile: withoutSecrets(profile),
    config,
    accessPolicy,
    security: user && sessions ? { mfaEnrolled: user.mfaEnrolled === true, sessions } : undefined,
  };
}

function withoutSecrets(resource: Resource): Resource {
  const copy: Record<string, unknown> = { ...resource };
  for (const field of SECRET_FIELDS) delete copy[field];
  return copy as unknown as Resource;
}

/** The membership's UserConfiguration, or a default one; a menu is added when it has none (as Medplum does). */
async function userConfiguration(db: SqlExecutor, project: Project, membership: ProjectMembership): Promise<UserConfiguration> {
  const ref = parseReference(membership.userConfiguration?.reference);
  const stored = ref?.[0] === 'UserConfiguration' ? await readAny(db, 'UserConfiguration', ref[1]) : undefined;
  const config: UserConfiguration = stored ?? { resourceType: 'UserConfiguration' };
  return config.menu ? config : { ...config, menu: defaultMenu(project, membership) };
}

/** The menu Medplum's app shows when a membership configures none: favourites, then admin pages by role. */
function defaultMenu(project: Project, membership: ProjectMembership): NonNullable<UserConfiguration['menu']> {
  const links = (pairs: [string, string][]) => pairs.map(([name, target]) => ({ name, target }));
  const favourites = ['Patient', 'Practitioner', 'Organization', 'ServiceRequest', 'DiagnosticReport', 'Questionnaire'];
  const menu: NonNullable<UserConfiguration['menu']> = [{ title: 'Favorites', link: links(favourites.map((type) => [type, `/${type}`])) }];
  if (membership.admin) {
    menu.push({
      title: 'Admin',
      link: links([
        ['Project', '/admin/project'],
        ['AccessPolicy', '/AccessPolicy'],
        ['Subscriptions', '/Subscription'],
        ['Batch', '/batch'],
      ]),
    });
  }
  if (project.superAdmin) menu.push({ title: 'Super Admin', link: links([['Projects', '/Project']]) });
  return menu;
}

/** The membership's AccessPolicy as it applies to the member: `%patient`, `%profile` replaced, as Medplum answers it. */
async function accessPolicyOf(db: SqlExecutor, membership: ProjectMembership): Promise<AccessPolicy | undefined> {
  const ref = parseReference(membership.accessPolicy?.reference);
  const stored = ref?.[0] === 'AccessPolicy' ? await readAny(db, 'AccessPolicy', ref[1]) : undefined;
  return stored && policyForMember(stored, membership.profile?.reference);
}

/**
 * The user's Logins in this project that are still open (not revoked) and were used within the
 * window, newest first; found through the Login search index (`user`), so the cost does not grow
 * with the project's other Logins.
 */
async function recentSessions(db: SqlExecutor, projectId: string, userId: string): Promise<UserSession[]> {
  const rows = await db.query<{ content: string }>(
    `SELECT r.content::text AS content
     FROM reference_index ri
     JOIN resource r ON r."resourceType" = 'Login' AND r.id = ri."resourceId"
     WHERE ri."projectId" = $1 AND ri."resourceType" = 'Login' AND ri.code = 'user'
       AND ri."targetId" = $2 AND ri."targetType" = 'User'
       AND NOT r.deleted AND r."lastUpdated" > $3::timestamptz
       AND r.content->>'membership' IS NOT NULL AND coalesce(r.content->>'revoked', 'false') <> 'true'
     ORDER BY r."lastUpdated" DESC
     LIMIT ${MAX_SESSIONS}`,
    [projectId, userId, new Date(Date.now() - SESSION_WINDOW_MS).toISOString()],
  );
  return rows
    .map((row) => JSON.parse(row.content) as Login)
    .map((login) => ({
      id: login.id!,
      lastUpdated: login.meta?.lastUpdated ?? '',
      authMethod: login.authMethod,
      remoteAddress: login.remoteAddress,
      userAgent: login.userAgent,
    }));
}
