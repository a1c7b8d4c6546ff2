import { membershipsReferencing } from '../auth/accounts.js';
import { changedResourceOf, resourceChangedTopic } from '../cache/invalidation.js';
import type { Viewer } from '../events/author-access.js';
import type { Subscription } from '../events/subscription.js';
import type { Identity } from '../identity/identity.js';
import { policyAllowsType, typeCriteria } from '../identity/policy.js';
import type { Services } from '../operations/context.js';
import { GuardedRepository } from './guarded-repository.js';
import { readSessionOf } from './context.js';
import { SYSTEM_AUTHOR } from './subscription-author.js';

const MAX_CACHED = 10_000;

/** Which cached viewers a committed change of one of these types makes stale. */
const SOURCES: Record<string, (identity: Identity, id: string) => boolean> = {
  ProjectMembership: (identity, id) => identity.membershipId === id,
  AccessPolicy: (identity, id) => identity.accessPolicy?.policyId === id,
  Project: (identity, id) => identity.projectId === id,
};

/** The server's own Subscriptions (written without a member) see everything. */
const SEES_EVERYTHING: Viewer = { sees: async () => true };

/**
 * What members may see now, for the events sent on their behalf: the owners of bound WebSockets
 * and the authors of Subscriptions. The identity of a membership (its project, admin flags,
 * AccessPolicy) is kept per membership and dropped on every server by the cache notice of any
 * committed change of that membership, its policy or its project, so an event costs no database
 * work unless the policy narrows the event's type by criteria (then the resource is read as the
 * member would read it, through the guarded repository). A membership deleted or made inactive
 * sees nothing.
 */
export class MemberViewers {
  private readonly identities = new Map<string, Promise<Identity | undefined>>();
  /** The membership acting for a Subscription author (`project`, `profile`), dropped on any membership change. */
  private readonly authors = new Map<string, Promise<string | undefined>>();

  constructor(private readonly services: Services) {
    for (const [resourceType, affects] of Object.entries(SOURCES)) {
      services.bus.subscribe(resourceChangedTopic(resourceType), (key) => {
        if (resourceType === 'ProjectMembership') this.authors.clear();
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
  async viewerOf(membershipId: string): Promise<Viewer | undefined> {
    const identity = await this.identityOf(membershipId);
    return identity && { sees: (resourceType, id, versionId, deleted) => this.sees(identity, resourceType, id, versionId, deleted) };
  }

  /**
   * The viewer of a Subscription's author, as Medplum finds it: the membership of the author's
   * profile in the Subscription's project, else (a super admin writing in another project) its
   * membership of a super admin project. Undefined when neither exists: nothing is delivered.
   */
  async authorViewer(projectId: string, subscription: Subscription): Promise<Viewer | undefined> {
    const author = subscription.meta?.author?.reference;
    if (author === SYSTEM_AUTHOR) return SEES_EVERYTHING;
    if (author === undefined) return undefined;
    const membershipId = await this.cached(this.authors, `${projectId}\u0000${author}`, () => this.membershipOfAuthor(projectId, author));
    return membershipId === undefined ? undefined : this.viewerOf(membershipId);
  }

  private async membershipOfAuthor(projectId: string, author: string): Promise<string | undefined> {
    const memberships = await membershipsReferencing(this.services.auth.db, 'profile', author);
    const own = memberships.find((membership) => membership.meta?.project === projectId);
    if (own) return own.id;
    for (const membership of memberships) {
      if ((await this.identityOf(membership.id!))?.superAdmin) return membership.id;
    }
    return undefined;
  }

  private identityOf(membershipId: string): Promise<Identity | undefined> {
    const { auth } = this.services;
    return this.cached(this.identities, membershipId, () =>
      auth.readMembership(`ProjectMembership/${membershipId}`).then((membership) => membership && auth.identityFor(membership)),
    );
  }

  /** The entry of `key`, read once; bounded (a flood of keys only costs reads again), a failed read not kept. */
  private cached<T>(map: Map<string, Promise<T>>, key: string, read: () => Promise<T>): Promise<T> {
    let pending = map.get(key);
    if (!pending) {
      if (map.size >= MAX_CACHED) map.clear();
      const reading = read();
      reading.catch(() => {
        if (map.get(key) === reading) map.delete(key);
      });
      map.set(key, (pending = reading));
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
