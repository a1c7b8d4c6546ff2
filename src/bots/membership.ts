import { membershipsReferencing } from '../auth/accounts.js';
import type { AuthService } from '../auth/service.js';
import type { ProjectMembership } from '../fhir/resources.js';
import type { Identity } from '../identity/identity.js';
import type { Repository } from '../storage/repository.js';

/**
 * The ProjectMembership a Bot acts through (profile and user `Bot/<id>`), made with the Bot (in its
 * transaction, src/access/guarded-repository.ts), without an AccessPolicy; an admin gives it one
 * like any membership. `repo`: the system repository of the Bot's project.
 */
export async function createBotMembership(repo: Repository, projectId: string, botId: string): Promise<ProjectMembership> {
  return (await repo.createResource('ProjectMembership', botMembershipOf(projectId, botId))).resource as ProjectMembership;
}

/** The content of a Bot's membership (for writers with a transaction of their own: Project/$clone). */
export function botMembershipOf(projectId: string, botId: string): ProjectMembership {
  const reference = `Bot/${botId}`;
  return { resourceType: 'ProjectMembership', project: { reference: `Project/${projectId}` }, user: { reference }, profile: { reference } };
}

/** The Bot's membership; made now for a Bot that has none (one stored before Bots came with theirs). */
export async function botMembership(auth: AuthService, projectId: string, botId: string): Promise<ProjectMembership> {
  const found = (await membershipsReferencing(auth.db, 'profile', `Bot/${botId}`)).find((membership) => membership.meta?.project === projectId);
  return found ?? createBotMembership(auth.repo(projectId), projectId, botId);
}

/** Who the bot's API calls act as: its membership, with that membership's access policy. */
export async function botIdentity(auth: AuthService, projectId: string, botId: string): Promise<Identity> {
  return auth.identityFor(await botMembership(auth, projectId, botId));
}
