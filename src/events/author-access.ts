import type { ChangedVersion } from './matching.js';
import type { Subscription } from './subscription.js';

/** What someone may see now of a changed resource (their AccessPolicy), as the access layer judges it. */
export interface Viewer {
  /** Whether the version `versionId` of the resource may be sent (`deleted`: the event is its delete). */
  sees(resourceType: string, id: string, versionId: string, deleted: boolean): Promise<boolean>;
}

/**
 * What the author of a Subscription (`meta.author`, stamped by the server on every write of it)
 * may see now, as the membership of that profile in the Subscription's project: undefined when
 * there is none any more (nothing is delivered then). Supplied by the access layer, cached.
 */
export type AuthorViewers = (projectId: string, subscription: Subscription) => Promise<Viewer | undefined>;

/**
 * Of the Subscriptions each version matched, those whose author may read it: a notification
 * carries the resource (or, without a payload, tells that it exists and changed), so a
 * Subscription delivers only what its author could have searched for. One author lookup per
 * Subscription for the whole batch.
 */
export async function visibleToAuthors(
  authors: AuthorViewers,
  projectId: string,
  versions: readonly ChangedVersion[],
  matched: readonly Subscription[][],
): Promise<Subscription[][]> {
  const viewers = new Map<Subscription, Promise<Viewer | undefined>>();
  const viewerOf = (subscription: Subscription) => {
    let viewer = viewers.get(subscription);
    if (!viewer) viewers.set(subscription, (viewer = authors(projectId, subscription)));
    return viewer;
  };
  return Promise.all(
    matched.map(async (list, index) => {
      const seen = await Promise.all(list.map((subscription) => authorSees(viewerOf(subscription), versions[index].change)));
      return list.filter((_, at) => seen[at]);
    }),
  );
}

/**
 * Whether the author (its viewer, pending) may see the change. A lookup that fails throws: the
 * change stays in the outbox and is matched again, rather than delivered unchecked or lost.
 */
export async function authorSees(viewer: Promise<Viewer | undefined>, change: ChangedVersion['change']): Promise<boolean> {
  const found = await viewer;
  return found !== undefined && found.sees(change.resourceType, change.id, change.versionId, change.interaction === 'delete');
}
