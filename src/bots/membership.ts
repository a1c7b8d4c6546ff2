import { membershipsReferencing } from '../auth/accounts.js';
import type { AuthService } from '../auth/service.js';
import type { ProjectMembership } from '../fhir/resources.js';
import type { Identity } from '../identity/identity.js';

/**
 * The ProjectMembership a Bot acts through (profile and user `Bot/<id>`): made when the Bot is
 * first deployed or run, without an AccessPolicy; an admin gives it one like any membership.
 */
export async function botMembership(auth: AuthService, projectId: string, botId: string): Promise<ProjectMembership> {
  const reference = `Bot/${botId}`;
  const found = (await membershipsReferencing(auth.db, 'profile', reference)).find((membership) => membership.meta?.project === projectId);
  if (found) return found;
  const membership: ProjectMembership = {
    resourceType: 'ProjectMembership',
    project: { reference: `Project/${projectId}` },
    user: { reference },
    profile: { reference },
  };
  const created = await auth.repo(projectId).createResource('ProjectMembership', membership);
  return created.resource as ProjectMembership;
}

/** Who the bot's API calls act as: its membership, with that membership's access policy. */
export async function botIdentity(auth: AuthService, projectId: string, botId: string): Promise<Identity> {
  return auth.identityFor(await botMembership(auth, projectId, botId));
}
