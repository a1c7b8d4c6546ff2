import { errors } from '../fhir/outcome.js';
import type { Identity } from '../identity/identity.js';
import type { PreparedWrite } from '../storage/types.js';
import { ItemError } from '../storage/types.js';

/**
 * Elements only a super admin may set or change, as Medplum guards them: `Bot.system` gives a
 * Bot the Project's `systemSecret` entries (src/bots/secrets.ts), which project admins do not see.
 * Anyone else's write must leave them as they were (a project admin's Bot sent back unchanged
 * passes). `system: false` and no `system` are the same.
 */
export function assertProtectedElementsKept(identity: Identity, writes: readonly PreparedWrite[]): void {
  if (identity.superAdmin) return;
  writes.forEach(({ input, existing }, index) => {
    if (input.resourceType !== 'Bot' || isSystemBot(input) === isSystemBot(existing)) return;
    const refusal = errors.forbidden('Only a super admin can set or change Bot.system', 'Bot.system');
    throw writes.length > 1 ? new ItemError(index, refusal) : refusal;
  });
}

function isSystemBot(resource: object | undefined): boolean {
  return (resource as { system?: unknown } | undefined)?.system === true;
}
