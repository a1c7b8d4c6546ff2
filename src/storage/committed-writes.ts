import type { InvalidationBus } from '../cache/invalidation.js';
import { resourceChangedTopic } from '../cache/invalidation.js';
import type { SearchCache } from '../cache/search-cache.js';
import type { TransactionalSql } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import type { ResourceCache } from './resource-cache.js';
import type { StoredVersion } from './types.js';

/**
 * What follows a committed write: this server's cache learns the new version, and every server,
 * this one included, drops what it cached of the resource (only watched types are sent: auth's
 * identities, a project's SearchParameters, profiles) and the search counts of its type. Nothing
 * happens before the commit, so no cache ever holds an uncommitted version.
 */
export class CommittedWrites {
  constructor(
    private readonly db: TransactionalSql,
    private readonly cache: ResourceCache,
    private readonly bus: InvalidationBus | undefined,
    private readonly searchCache: SearchCache | undefined,
  ) {}

  /** A new current version, stored as `text`. */
  written(resource: Resource, text: string): void {
    this.db.afterCommit(() => {
      const meta = resource.meta!;
      this.cache.set({
        resourceType: resource.resourceType,
        id: resource.id!,
        projectId: meta.project!,
        versionId: meta.versionId!,
        lastUpdated: meta.lastUpdated!,
        deleted: false,
        text,
      });
      this.announce(resource.resourceType, meta.project!, resource.id!);
    });
  }

  /** A new resource this server does not cache: only the notices. */
  announced(resourceType: string, projectId: string, id: string): void {
    this.db.afterCommit(() => this.announce(resourceType, projectId, id));
  }

  /** A deletion, written as `version`. */
  deleted(version: StoredVersion): void {
    this.db.afterCommit(() => {
      this.cache.set(version);
      this.announce(version.resourceType, version.projectId, version.id);
    });
  }

  /** Resources expunged: nothing of them is left to cache. */
  expunged(keys: readonly { resourceType: string; id: string; projectId: string }[]): void {
    this.db.afterCommit(() => {
      for (const key of keys) {
        this.cache.forget(key.resourceType, key.id);
        this.announce(key.resourceType, key.projectId, key.id);
      }
    });
  }

  private announce(resourceType: string, projectId: string, id: string): void {
    this.searchCache?.written(projectId, resourceType);
    const topic = resourceChangedTopic(resourceType);
    if (this.bus?.hasSubscribers(topic)) void this.bus.publish(topic, `${projectId}/${id}`);
  }
}
