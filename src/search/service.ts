import { builtinMatches } from './builtin-definitions.js';
import { includedResources } from './includes.js';
import { readPage } from './plan/choose.js';
import { pageLinks } from './plan/paging.js';
import { parseQuery, readsPage, wantsTotal, type SearchQuery } from './plan/query.js';
import type { SearchOptions, SearchResult } from './result.js';
import type { SearchServices } from './search-services.js';
import { searchTotal } from './total.js';
import { searchWithBuiltins } from './with-builtins.js';
import { withoutBotCode } from '../storage/bot-code.js';
import type { WriteDependency } from '../cache/search-cache.js';

export { DEFAULT_COUNT, MAX_COUNT, MAX_OFFSET, MIN_CURSOR_COUNT, parseOffset, wholeNumber } from './plan/control.js';
export type { Paging, SearchOptions, SearchResult, SearchRow, SearchTotal } from './result.js';
export { checkSearchSize } from './plan/limits.js';
export { searchServicesFor, type SearchContext, type SearchServices, type SearchServicesOptions } from './search-services.js';

/**
 * The search service (http://hl7.org/fhir/R4/search.html, SPEC 4.8 and 8), transport-free: REST
 * and GraphQL hand it parsed parameters and get matches, includes, a total and paging positions.
 * A search runs one way through: the request is parsed once into a typed query (plan/query.ts),
 * a page strategy is chosen and read (plan/choose.ts, pages/), then the includes (includes.ts)
 * and the total (total.ts).
 */

/**
 * Runs a search over `types` (one type for a type search; several, or undefined for every type,
 * for a system search) in the caller's scope: their project, or every project for a super admin,
 * narrowed by `_project`.
 */
export async function search(
  services: SearchServices,
  types: string | readonly string[] | undefined,
  params: readonly [string, string][],
  options: SearchOptions = {},
): Promise<SearchResult> {
  const builtins = options.withBuiltins ? builtinMatches(types, params) : undefined;
  if (!builtins) return searchStored(services, types, params, options);
  return searchWithBuiltins(services, builtins.type, params, options, builtins.rows, (own) => searchStored(services, types, own, options));
}

async function searchStored(
  services: SearchServices,
  types: string | readonly string[] | undefined,
  params: readonly [string, string][],
  options: SearchOptions,
): Promise<SearchResult> {
  const query = await parseQuery(services, types, params, options.lenient ?? false);
  const result = emptyResult(query);
  if (readsPage(query)) {
    const page = await readPage(query, options.withoutContent ?? false);
    Object.assign(result.paging, pageLinks(query.services.config.fhirBaseUrl, query.paging, query.control, page));
    // Bot code Binaries are left out of what members see (src/storage/bot-code.ts): a page may hold
    // fewer than `_count`, and a total still counts them.
    const db = services.primary ?? services.db;
    result.matches = await withoutBotCode(db, services.identity, page.rows);
    result.includes = await withoutBotCode(db, services.identity, await includedResources(query, result.matches));
  }
  if (wantsTotal(query)) result.total = await searchTotal(query, result);
  result.dependency = answerDependency(query, params);
  return result;
}

/** What the whole answer depends on: included resources are of other types, so any write of the project. */
function answerDependency({ dependency }: SearchQuery, params: readonly [string, string][]): WriteDependency | undefined {
  if (!dependency) return undefined;
  const includes = params.some(([name]) => name.startsWith('_include') || name.startsWith('_revinclude'));
  return includes ? { projectIds: dependency.projectIds, types: undefined } : dependency;
}

function emptyResult({ control, paging, leniency }: SearchQuery): SearchResult {
  return {
    matches: [],
    includes: [],
    warnings: leniency.warnings,
    summary: control.summary,
    elements: control.elements,
    paging: { count: control.count, cursorMode: paging.cursorMode, offset: control.offset, cursor: control.cursor, params: paging.linkParams },
  };
}
