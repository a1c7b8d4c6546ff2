import { changedResourceOf, resourceChangedTopic } from '../cache/invalidation.js';
import type { SocketViewer } from '../events/websocket/session.js';
import type { Identity } from '../identity/identity.js';
import { policyAllowsType, typeCriteria } from '../identity/policy.js';
import type { Services } from '../operations/context.js';
import { GuardedRepository } from './guarded-repository.js';
import { readSessionOf } from './context.js';

const MAX_CACHED = 10_000;

/** Which cached viewers a committed change of one of these types makes stale. */
const SOURCES: Record<string, (identity: Identity, id: string) => boolean> = {
  ProjectMembership: (identity, id) => identity.membershipId === id,
  AccessPolicy: (identity, id) => identity.accessPolicy?.policyId === id,
  Project: (identity, id) => identity.projectId === id,
};

/**
 * What the owners of bound WebSockets may see now, for the events sent to them: the identity of a
 * binding's membership (its project, admin flags, AccessPolicy) is kept per membership and dropped
 * on every server by the cache notice of any committed change of that membership, its policy or
 * its project, so an event costs no database work unless the policy narrows the event's type by
 * criteria (then the resource is read as the owner would read it, through the guarded
 * repository). A membership deleted or made inactive sees nothing.
 */
export class SocketViewers {
  private readonly identities = new Map<string, Promise<Identity | undefined>>();

  constructor(private readonly services: Services) {
    for (const [resourceType, affects] of Object.entries(SOURCES)) {
      services.bus.subscribe(resourceChangedTopic(resourceType), (key) => {
        const changed = changedResourceOf(key);
        if (!changed) return this.identities.clear();
        for (const [membershipId, pending] of this.identities) {
          void pending.then((identity) => {
            if (!identity || affects(identity, changed.id)) this.forget(membershipId, pending);
          });
        }
      });
    }
  }

  /** The viewer of a membership; undefined when it no longer exists or is inactive. */
  async viewerOf(membershipId: string): Promise<SocketViewer | undefined> {
    const identity = await this.identityOf(membershipId);
    return identity && { sees: (resourceType, id, versionId, deleted) => this.sees(identity, resourceType, id, versionId, deleted) };
  }

  private identityOf(membershipId: string): Promise<Identity | undefined> {
    let pending = this.identities.get(membershipId);
    if (!pending) {
      // Bounded by the memberships with bound sockets; a flood of them only costs reads again.
      if (this.identities.size >= MAX_CACHED) this.identities.clear();
      const { auth } = this.services;
      pending = auth.readMembership(`ProjectMembership/${membershipId}`).then((membership) => membership && auth.identityFor(membership));
      // A failed read is not kept: the next event asks again.
      const read = pending;
      read.catch(() => this.forget(membershipId, read));
      this.identities.set(membershipId, read);
    }
    return pending;
  }

  /** Drops an entry only if it is still the read that was judged stale, not a newer one. */
  private forget(membershipId: string, read: Promise<Identity | undefined>): void {
    if (this.identities.get(membershipId) === read) this.identities.delete(membershipId);
  }

  private async sees(identity: Identity, resourceType: string, id: string, versionId: string, deleted: boolean): Promise<boolean> {
    if (!policyAllowsType(identity, resourceType)) return false;
    if (!typeCriteria(identity, resourceType)) return true;
    // A deleted resource can no longer be tested against the criteria: its delete is not sent.
    if (deleted) return false;
    // The criteria are tested on the index, which holds the current version only: an event whose
    // version was replaced since cannot be tested, and is not sent (the newer version's event is).
    const repo = new GuardedRepository(this.services, identity, readSessionOf(this.services, identity), undefined);
    return repo.currentVersionWithinCriteria(resourceType, id).then(
      (current) => current === versionId,
      () => false,
    );
  }
}
