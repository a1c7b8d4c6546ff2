import DataLoader from 'dataloader';
import type { RequestContext } from '../operations/context.js';
import type { Resource } from '../fhir/types.js';
import { collectRows } from '../indexing/collect.js';
import { getIndexPlan } from '../indexing/plan.js';
import { searchWithClientSecrets } from '../access/client-secrets.js';
import { DEFAULT_COUNT, MAX_COUNT, search, searchServicesFor } from '../search/service.js';
import { keyOf, type ReadKey } from '../storage/types.js';
import { parsedResources } from './parsed-cache.js';

/**
 * Per-request batching loaders (DataLoader), so nested reference loads cost a constant number of
 * queries: every `Reference.resource` of one execution level is collected into one batch, read with
 * one statement (Repository.readVersions) under the same project isolation and AccessPolicy as a
 * single read; reverse reference lists of one level share one search. Built per request: nothing
 * is shared between callers.
 */
export interface Loaders {
  /**
   * Current version of `Type/id` as FHIR JSON; null when missing, deleted or not visible to the
   * caller. A resource the request already holds (see `remember`) comes back at once; the others
   * are loaded in batches.
   */
  reference(key: string): Resource | null | Promise<Resource | null>;
  /** The resource whose `contained` list an object sits in, for `#id` references (see `remember`). */
  containerOf(value: object): Resource | undefined;
  /**
   * Records a resource the request obtained by a read or search: later references to it need no
   * query (the read already applied the caller's access rules), and references inside it to `#id`
   * can find its contained resources.
   */
  remember(resource: Resource): Resource;
  /**
   * Reverse references: the `query.source` resources whose reference parameter `query.code` points
   * at `parent` (`Type/id`). Calls of one execution level with the same query are batched.
   */
  reverse(query: ReverseQuery, parent: string): Promise<Resource[]>;
}

/** A reverse reference list without its parent: `<source>?<code>=<parent>&<params>&_count&_offset&_sort`. */
export interface ReverseQuery {
  source: string;
  code: string;
  /** More search conditions (`_params`), ANDed with the reference. */
  params?: readonly [string, string][];
  count?: number;
  offset?: number;
  sort?: string;
}

export function createLoaders(ctx: RequestContext): Loaders {
  return new RequestLoaders(ctx);
}

/**
 * The loaders of one request. Its parts are made on first use: most requests (one resource by id)
 * never batch anything, and a DataLoader with its closures per request showed in their profiles.
 */
class RequestLoaders implements Loaders {
  private containers: WeakMap<object, Resource> | undefined;
  // Resources the request obtained by a read or search, by `Type/id`: as DataLoader.prime would
  // (the first one kept), without a settled promise per resource (a page of 100 search matches).
  private readonly known = new Map<string, Resource>();
  private readonly requested = new Set<string>();
  private references: DataLoader<string, Resource | null> | undefined;
  private reverseLoaders: Map<string, DataLoader<string, Resource[]>> | undefined;

  constructor(private readonly ctx: RequestContext) {}

  reference(key: string): Resource | null | Promise<Resource | null> {
    const resource = this.known.get(key);
    if (resource) return resource;
    this.requested.add(key);
    // A list of 1000 items with one reference each is one batch: the repository's single statement.
    this.references ??= new DataLoader((keys) => this.readReferences(keys), { maxBatchSize: 1000 });
    return this.references.load(key);
  }

  containerOf(value: object): Resource | undefined {
    return this.containers?.get(value);
  }

  remember(resource: Resource): Resource {
    this.recordContainer(resource);
    if (resource.id) {
      const key = keyOf({ resourceType: resource.resourceType, id: resource.id });
      if (!this.known.has(key) && !this.requested.has(key)) this.known.set(key, resource);
    }
    return resource;
  }

  reverse(query: ReverseQuery, parent: string): Promise<Resource[]> {
    const key = JSON.stringify([query.source, query.code, query.params ?? [], query.count, query.offset, query.sort]);
    this.reverseLoaders ??= new Map();
    let loader = this.reverseLoaders.get(key);
    if (!loader) {
      loader = new DataLoader((parents) => reverseLists(this.ctx, query, parents), { maxBatchSize: 100 });
      this.reverseLoaders.set(key, loader);
    }
    return loader.load(parent);
  }

  private async readReferences(keys: readonly string[]): Promise<(Resource | null)[]> {
    // Versions already parsed need no text: the statement sends only those that changed.
    const held: (Resource | undefined)[] = new Array(keys.length);
    const readKeys: ReadKey[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const entry = parsedResources.held(key);
      const slash = key.indexOf('/');
      // One shape for every key (a spread, or an optional property, measured slower at 100 keys).
      readKeys[i] = { resourceType: key.slice(0, slash), id: key.slice(slash + 1), heldVersionId: entry?.versionId };
      held[i] = entry?.resource;
    }
    const versions = await this.ctx.repo.readVersions(readKeys);
    const resources: (Resource | null)[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const version = versions.get(key);
      const resource = !version ? undefined : version.text === null ? held[i] : parsedResources.parse(key, version.versionId, version.text);
      if (resource) this.recordContainer(resource);
      resources[i] = resource ?? null;
    }
    return resources;
  }

  private recordContainer(resource: Resource): void {
    if (!Array.isArray(resource.contained) || resource.contained.length === 0) return;
    markInside(resource, resource, (this.containers ??= new WeakMap()));
  }
}

/** Maps every object inside `value` to `container` (only resources with contained ones are walked). */
function markInside(value: unknown, container: Resource, containers: WeakMap<object, Resource>): void {
  if (typeof value !== 'object' || value === null) return;
  containers.set(value, container);
  for (const child of Array.isArray(value) ? value : Object.values(value)) markInside(child, container, containers);
}

/**
 * Reverse lists of many parents with one search (`code=P1,P2,...`, up to MAX_COUNT matches), split by
 * parent in memory with the same index rows the search matched on: a parent's list is the batch's
 * order restricted to it, so `_sort` holds, and `_count` is applied per parent. Searches with an
 * `_offset`, a single parent, or a batch with more matches than one search returns fall back to one
 * search per parent, so every parent gets exactly what its own search would give.
 */
async function reverseLists(ctx: RequestContext, query: ReverseQuery, parents: readonly string[]): Promise<Resource[][]> {
  const count = query.count ?? DEFAULT_COUNT;
  const one = async (parent: string) =>
    (await reverseSearch(ctx, query, parent, [['_count', String(count)], ...offsetParam(query)])).resources;
  if (parents.length === 1 || (query.offset ?? 0) > 0 || count === 0) return Promise.all(parents.map(one));
  const batch = await reverseSearch(ctx, query, parents.join(','), [['_count', String(MAX_COUNT)]]);
  if (batch.complete === false) return Promise.all(parents.map(one));
  const plan = getIndexPlan(query.source).filter((param) => param.code === query.code);
  const lists = new Map<string, Resource[]>(parents.map((parent) => [parent, []]));
  for (const resource of batch.resources) {
    const targets = new Set(collectRows(resource, plan).reference.map((row) => `${row.targetType}/${row.targetId}`));
    for (const target of targets) {
      const list = lists.get(target);
      if (list && list.length < count) list.push(resource);
    }
  }
  return parents.map((parent) => lists.get(parent)!);
}

async function reverseSearch(
  ctx: RequestContext,
  query: ReverseQuery,
  parents: string,
  paging: [string, string][],
): Promise<{ resources: Resource[]; complete: boolean }> {
  const params: [string, string][] = [[query.code, parents], ...(query.params ?? []), ...paging];
  if (query.sort !== undefined) params.push(['_sort', query.sort]);
  const result = await searchWithClientSecrets(ctx, await search(searchServicesFor(ctx), query.source, params));
  const resources = result.matches.map((row) => parsedResources.parse(keyOf(row), row.versionId, row.text));
  return { resources, complete: !result.paging.next };
}

function offsetParam(query: ReverseQuery): [string, string][] {
  return query.offset === undefined ? [] : [['_offset', String(query.offset)]];
}
