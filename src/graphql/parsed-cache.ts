import type { Resource } from '../fhir/types.js';

/**
 * Parsed resources by version, shared by every GraphQL request of this server. A stored version
 * never changes (a write makes a new versionId), so the parsed JSON of `Type/id` at version V is
 * the same for every caller who may see it: whether a caller may see it is decided before the
 * cache is asked (the search or read that returned V applied the caller's project, AccessPolicy
 * and deletion rules). Parsing the JSON of a page of 100 Observations with their 100 subjects
 * measured as the largest single cost of such a query on the main thread; with this cache a
 * repeated page parses nothing.
 *
 * Entries are deeply frozen: resolvers only read them, and a resolver that tried to change one
 * would fail loudly instead of changing what other requests see. Types whose text the repository
 * rewrites for some callers (ClientApplication gets its secret attached for project admins) are
 * never cached, nor are large resources (they would crowd out many small ones).
 */
export class ParsedResourceCache {
  private readonly entries = new Map<string, { versionId: string; resource: Resource }>();
  /** By resource type: the share of recent search matches this cache held (notePage). */
  private readonly pageShares = new Map<string, number>();

  constructor(private readonly maxEntries: number) {}

  /** The parsed resource of `Type/id` at exactly `versionId`, if cached. */
  get(key: string, versionId: string): Resource | undefined {
    const entry = this.entries.get(key);
    return entry?.versionId === versionId ? entry.resource : undefined;
  }

  /**
   * Whether the recent search pages of `type` were mostly versions this cache holds: a search may
   * then ask for the matches' versions only and take their JSON from here (see `notePage`).
   */
  holdsPagesOf(type: string): boolean {
    return (this.pageShares.get(type) ?? 0) > HELD_PAGE_SHARE;
  }

  /**
   * Records how many of a search page's `total` matches of `type` this cache held: an average
   * over the recent pages (each new page counts for half), so a client repeating a page switches
   * to version-only searches from its fourth request, and one walking new pages switches back.
   */
  notePage(type: string, held: number, total: number): void {
    if (total === 0) return;
    const share = ((this.pageShares.get(type) ?? 0) + held / total) / 2;
    if (!this.pageShares.has(type) && this.pageShares.size >= MAX_PAGE_TYPES) this.pageShares.clear();
    this.pageShares.set(type, share);
  }

  /** The version of `Type/id` the cache holds, if any (the caller may then skip loading its text). */
  held(key: string): { versionId: string; resource: Resource } | undefined {
    return this.entries.get(key);
  }

  /**
   * The resource of `Type/id` at `versionId` from its stored JSON text: the cached one when the
   * cache holds that version, otherwise parsed (and cached when it qualifies).
   */
  parse(key: string, versionId: string, text: string): Resource {
    const cached = this.get(key, versionId);
    if (cached) return cached;
    const resource = JSON.parse(text) as Resource;
    if (this.maxEntries > 0 && text.length <= MAX_CACHED_TEXT_LENGTH && !UNCACHED_TYPES.has(resource.resourceType)) {
      this.entries.delete(key);
      this.entries.set(key, { versionId, resource: deepFreeze(resource) });
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    }
    return resource;
  }
}

/** Above this share of held matches, a type's searches ask for versions only (holdsPagesOf). */
const HELD_PAGE_SHARE = 0.5;
/** Resource types tracked by notePage (there are about 150). */
const MAX_PAGE_TYPES = 1000;

/** Resources larger than this (as JSON text) are parsed per request. */
const MAX_CACHED_TEXT_LENGTH = 64 * 1024;

/** Types whose JSON the repository may rewrite per caller (see GuardedRepository.withSecret). */
const UNCACHED_TYPES = new Set(['ClientApplication']);

/** Entries kept: about the subjects and matches of a few dozen pages of 100. */
export const PARSED_CACHE_SIZE = 5000;

/** One cache for the process (its entries are immutable versions, valid for every caller). */
export const parsedResources = new ParsedResourceCache(PARSED_CACHE_SIZE);

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
