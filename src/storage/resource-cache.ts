import type { StoredVersion } from './types.js';

/**
 * Current versions of recently used resources, by `Type/id`. Coherent only when this process is
 * the database's sole writer, which is true of the embedded database (PGlite is opened by one
 * process). With PostgreSQL several servers may write, so the server uses `noResourceCache`.
 * The repository updates an entry only after its write has committed.
 */
export interface ResourceCache {
  /** False for the no-op cache (PostgreSQL, or RESOURCE_CACHE_SIZE=0). */
  readonly enabled: boolean;
  get(resourceType: string, id: string): StoredVersion | undefined;
  /** After a committed write: replaces the entry unless the cache already holds a newer version. */
  set(version: StoredVersion): void;
  /**
   * After a read from the database: adds the version only when nothing is cached, so a read that
   * raced with a write can never put back the version the write replaced.
   */
  fill(version: StoredVersion): void;
  /** After a committed expunge: the resource is gone for good, with nothing to cache in its place. */
  forget(resourceType: string, id: string): void;
}

export const noResourceCache: ResourceCache = {
  enabled: false,
  get: () => undefined,
  set: () => undefined,
  fill: () => undefined,
  forget: () => undefined,
};

/** Large resources are read from the database: caching them would crowd out many small ones. */
const MAX_CACHED_TEXT_LENGTH = 64 * 1024;

/** A least-recently-used cache bounded by entry count (a Map keeps insertion order). */
export class LruResourceCache implements ResourceCache {
  readonly enabled = true;
  private readonly entries = new Map<string, StoredVersion>();

  constructor(private readonly maxEntries: number) {}

  get(resourceType: string, id: string): StoredVersion | undefined {
    const key = `${resourceType}/${id}`;
    const version = this.entries.get(key);
    if (version) {
      this.entries.delete(key);
      this.entries.set(key, version);
    }
    return version;
  }

  set(version: StoredVersion): void {
    const key = `${version.resourceType}/${version.id}`;
    const current = this.entries.get(key);
    if (current && current.lastUpdated > version.lastUpdated) return;
    this.entries.delete(key);
    if ((version.text?.length ?? 0) > MAX_CACHED_TEXT_LENGTH) return;
    this.entries.set(key, version);
    if (this.entries.size > this.maxEntries) {
      this.entries.delete(this.entries.keys().next().value as string);
    }
  }

  fill(version: StoredVersion): void {
    if (!this.entries.has(`${version.resourceType}/${version.id}`)) this.set(version);
  }

  forget(resourceType: string, id: string): void {
    this.entries.delete(`${resourceType}/${id}`);
  }
}

/** A cache that serves nothing and only learns committed versions (the writes of a joined transaction). */
export function commitOnly(cache: ResourceCache): ResourceCache {
  return { enabled: false, get: () => undefined, fill: () => undefined, set: (version) => cache.set(version), forget: (type, id) => cache.forget(type, id) };
}
