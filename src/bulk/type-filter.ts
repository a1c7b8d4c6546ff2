import type { Database } from '../db/database.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { MAX_COUNT, search, searchServicesFor, type SearchContext } from '../search/service.js';
import { pastVersionsMatching, type PastVersion } from './past-versions.js';

/**
 * `_typeFilter` (Bulk Data Access IG 2.0): search queries per type, `Observation?category=vital-signs`;
 * a resource of a type that has some is exported when it meets at least one. Each query is run by
 * the search service as the exporter, narrowed to the ids of the page being written, so every
 * search parameter, modifier and chain works as in a search, and the exporter's AccessPolicy too.
 * A resource changed since the export's transactionTime is judged by the version written
 * (past-versions.ts).
 */
export type TypeFilters = ReadonlyMap<string, readonly [string, string][][]>;

/** Parameters that shape a search's answer rather than select: meaningless in a filter. */
const RESULT_PARAMETERS = new Set(['_count', '_offset', '_cursor', '_sort', '_include', '_revinclude', '_elements', '_summary', '_total', '_id']);

/** The queries of `_typeFilter` by type; 400 for one that is not `Type?search` or names a result parameter. */
export function parseTypeFilters(values: readonly string[] | undefined): TypeFilters {
  const filters = new Map<string, [string, string][][]>();
  // Queries are comma-separated; a comma inside one (an OR of values) is followed by no `Type?`.
  for (const query of (values ?? []).flatMap((value) => value.split(/,(?=[A-Z][A-Za-z]*\?)/))) {
    const mark = query.indexOf('?');
    const type = query.slice(0, mark);
    if (mark < 0 || !isResourceType(type)) throw errors.invalid(`_typeFilter "${query}" is not a search of a resource type: use Type?parameter=value`, '_typeFilter');
    const params = [...new URLSearchParams(query.slice(mark + 1))];
    const result = params.find(([name]) => RESULT_PARAMETERS.has(name.split(':')[0]));
    if (result) throw errors.invalid(`_typeFilter "${query}" names ${result[0]}, which does not select resources`, '_typeFilter');
    filters.set(type, [...(filters.get(type) ?? []), params]);
  }
  return filters;
}

/** `ids` in groups whose `_id` value stays within the search's own bounds (length and OR values). */
function idGroups(ctx: SearchContext, ids: readonly string[]): string[][] {
  const most = Math.min(ctx.config.searchMaxOrValues, MAX_COUNT);
  const groups: string[][] = [];
  let group: string[] = [];
  let length = 0;
  for (const id of ids) {
    if (group.length > 0 && (group.length === most || length + 1 + id.length > ctx.config.searchMaxValueLength)) {
      groups.push(group);
      group = [];
      length = 0;
    }
    length += (group.length > 0 ? 1 : 0) + id.length;
    group.push(id);
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** The services the filters run with: the request's, for ids the export sends rather than a client. */
function filterSearchContext(ctx: SearchContext): SearchContext {
  return { database: ctx.database, reads: ctx.reads, identity: ctx.identity, config: ctx.config, searchCache: ctx.searchCache };
}

/** Runs each query once, so that a bad parameter is the kick-off's 400, not a failed job. */
export async function checkTypeFilters(ctx: SearchContext, filters: TypeFilters): Promise<void> {
  const services = searchServicesFor(filterSearchContext(ctx));
  for (const [type, queries] of filters) {
    for (const params of queries) await search(services, type, [...params, ['_count', '1']], { withoutContent: true });
  }
}

/**
 * Whether the caller's AccessPolicy or SMART scopes can narrow what it reads: then every page of
 * every type goes through the search service, as a `_typeFilter` does, so the policy's criteria
 * apply to each resource exactly as in a search; an unrestricted caller's pages are copied as stored.
 */
export function exportIsRestricted(ctx: Pick<SearchContext, 'identity'>): boolean {
  const { identity } = ctx;
  return (identity.accessPolicy !== undefined && !identity.superAdmin) || identity.scopes !== undefined;
}

/** A page's resources as a matcher sees them: the current version's id, or a past version's text. */
export interface PageVersions {
  /** Resources whose current version is the one written: the search index holds its rows. */
  current: readonly string[];
  /** Resources changed since transactionTime, written in an older version. */
  past: readonly PastVersion[];
}

/**
 * Which resources of a page (of `type`) meet one of the type's queries, as the exporter sees them;
 * undefined when the type has none and the exporter is unrestricted (every one is written).
 */
export function typeFilterMatcher(ctx: SearchContext, filters: TypeFilters, db: Database): (type: string, page: PageVersions) => Promise<Set<string> | undefined> {
  const scoped = filterSearchContext(ctx);
  const services = searchServicesFor(scoped);
  // A restricted exporter's unfiltered types: one query without parameters, the policy's own.
  const unfiltered = exportIsRestricted(ctx) ? [[]] : undefined;
  const groups = (ids: readonly string[]): string[][] => idGroups(ctx, ids);
  return async (type, { current, past }) => {
    const queries = filters.get(type) ?? unfiltered;
    if (!queries) return undefined;
    const kept = past.length > 0 ? await pastVersionsMatching(db, scoped, type, queries, past, groups) : new Set<string>();
    for (const some of idGroups(ctx, current)) {
      for (const params of queries) {
        const found = await search(services, type, [...params, ['_id', some.join(',')], ['_count', String(some.length)]], { withoutContent: true });
        for (const row of found.matches) kept.add(row.id);
      }
    }
    return kept;
  };
}
