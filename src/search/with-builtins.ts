import type { Resource } from '../fhir/types.js';
import { parseQuery } from './plan/query.js';
import type { SearchOptions, SearchResult, SearchRow } from './result.js';
import type { SearchServices } from './search-services.js';

/** A search of the stored resources (search() without the built-ins). */
export type StoredSearch = (params: readonly [string, string][]) => Promise<SearchResult>;

/**
 * A search whose matches start with the built-in definitions `builtins` (builtin-definitions.ts),
 * then the project's own: the page is cut from that sequence, so offset paging, `_count` and the
 * total count both. The project's part is the stored search with its `_count` and `_offset`
 * moved past the built-ins; it also checks the parameters (a bad one is its 400).
 */
export async function searchWithBuiltins(
  services: SearchServices,
  type: string,
  params: readonly [string, string][],
  options: SearchOptions,
  builtins: readonly Resource[],
  stored: StoredSearch,
): Promise<SearchResult> {
  const { control } = await parseQuery(services, type, params, options.lenient ?? false);
  const { count, offset } = control;
  const reads = control.summary !== 'count' && count > 0;
  const shown = reads ? builtins.slice(offset, offset + count) : [];
  const ownCount = count - shown.length;
  const ownOffset = Math.max(0, offset - builtins.length);
  const paging = params.filter(([name]) => name !== '_count' && name !== '_offset');
  // With the page full of built-ins, one stored row still says whether more follow.
  const own = await stored([...paging, ['_count', String(Math.max(ownCount, 1))], ['_offset', String(ownOffset)]]);
  const ownRows = ownCount > 0 ? own.matches : [];
  const more = offset + count < builtins.length || (ownCount > 0 ? own.paging.next !== undefined : own.matches.length > 0);
  const result: SearchResult = {
    ...own,
    matches: [...shown.map(asRow), ...ownRows],
    includes: ownCount > 0 ? own.includes : [],
    paging: { ...own.paging, count, offset, next: undefined, previous: undefined },
  };
  if (!reads) result.matches = [];
  if (reads && more) result.paging.next = { offset: offset + count };
  if (offset > 0) result.paging.previous = { offset: Math.max(0, offset - count) };
  if (own.total) result.total = { value: own.total.value + builtins.length, exact: own.total.exact };
  return result;
}

/** A page's built-in definition as a row; its text made now (they are many and large, a page few). */
function asRow(resource: Resource): SearchRow {
  return {
    resourceType: resource.resourceType,
    id: resource.id ?? '',
    // No project holds them. Callers key a page's versions by versionId alone (GraphQL), so each
    // has its own; the text keeps the definition's meta as shipped.
    projectId: '',
    versionId: `builtin:${resource.id ?? ''}`,
    lastUpdated: resource.meta?.lastUpdated ?? '',
    text: JSON.stringify(resource),
  };
}
