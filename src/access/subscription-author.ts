import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';

/** Medplum's author of what the server writes itself: Subscriptions it holds deliver everything. */
export const SYSTEM_AUTHOR = 'system';

/**
 * Who a Subscription's writer is, as `meta.author` records it: the writer's profile (as Medplum
 * stamps it on every write), or `system` for the server's own callers, which act without a
 * membership and administer the project. Undefined for any other caller: its Subscription
 * delivers nothing, since nobody's access can be checked for it.
 */
function authorOf(identity: Identity): string | undefined {
  if (identity.profile) return identity.profile;
  return identity.membershipId === undefined && (identity.superAdmin || identity.projectAdmin === true) ? SYSTEM_AUTHOR : undefined;
}

/**
 * The writes with each Subscription's `meta.author` set to its writer, whatever the body said:
 * deliveries are checked against the author's access (src/access/member-viewers.ts), so a
 * writer must not name someone else. The last writer is the author, as in Medplum: an admin who
 * changes a member's Subscription takes it on.
 */
export function withSubscriptionAuthors(identity: Identity, writes: readonly Resource[]): Resource[] {
  if (!writes.some((write) => write.resourceType === 'Subscription')) return [...writes];
  const author = authorOf(identity);
  return writes.map((write) => {
    if (write.resourceType !== 'Subscription') return write;
    const { author: _given, ...meta } = write.meta ?? {};
    return { ...write, meta: author === undefined ? meta : { ...meta, author: { reference: author } } };
  });
}
