import { errors, type OperationOutcomeError } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import type { PreparedWrite } from '../storage/types.js';
import { ItemError } from '../storage/types.js';

/**
 * Writes only a super admin may make, whatever the type's other rules, as Medplum guards them:
 *
 * - `Bot.system` gives a Bot the Project's `systemSecret` entries (src/bots/secrets.ts), which
 *   project admins do not see. Anyone else's write must leave it as it was (a project admin's Bot
 *   sent back unchanged passes). `system: false` and no `system` are the same.
 * - A server-wide User (no `User.project`) is one account across every project: its email is
 *   unique server-wide, so a project admin who could write one could take any email before its
 *   owner signs up, or change the account of someone who is a member elsewhere too. Project admins
 *   make them through invites (which reuse the email's User when there is one); any other create,
 *   update or patch that writes a User without `project`, or changes one that had none, is 403
 *   (and so is a delete: GuardedRepository.deleteResource).
 */
export function assertProtectedElementsKept(identity: Identity, writes: readonly PreparedWrite[]): void {
  if (identity.superAdmin) return;
  writes.forEach(({ input, existing }, index) => {
    const refusal = refusalOf(input, existing);
    if (refusal) throw writes.length > 1 ? new ItemError(index, refusal) : refusal;
  });
}

function refusalOf(input: Resource, existing: Resource | undefined): OperationOutcomeError | undefined {
  if (input.resourceType === 'Bot' && isSystemBot(input) !== isSystemBot(existing)) {
    return errors.forbidden('Only a super admin can set or change Bot.system', 'Bot.system');
  }
  if (input.resourceType === 'User' && (isServerWide(input) || (existing !== undefined && isServerWide(existing)))) return serverWideUserRefusal('write');
  return undefined;
}

/** 403: a server-wide User is written (or deleted: it may be a member of other projects) by a super admin only. */
export function serverWideUserRefusal(what: 'write' | 'delete'): OperationOutcomeError {
  const how = what === 'write' ? ': invite practitioners with /admin/projects/{id}/invite, or give the User the project it is stored in' : ': remove its membership of your project instead';
  return errors.forbidden(`Only a super admin can ${what} a server-wide User (one without User.project)${how}`, 'User.project');
}

function isSystemBot(resource: object | undefined): boolean {
  return (resource as { system?: unknown } | undefined)?.system === true;
}

export function isServerWide(user: Resource): boolean {
  return (user.project as { reference?: unknown } | undefined)?.reference === undefined;
}
