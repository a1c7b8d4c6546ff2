import { isResourceType } from '../../fhir/definitions.js';
import { errors } from '../../fhir/outcome.js';
import { parametersForSearch } from '../../indexing/parameters.js';
import { policyAllowsType } from '../../identity/policy.js';
import type { CompileContext } from '../query/conditions/types.js';
import { selectsByKey } from '../query/conditions/keys.js';
import { type Scope } from '../../storage/project-scope.js';
import { SqlArgs } from '../../db/sql-args.js';
import type { WriteDependency } from '../../cache/search-cache.js';
import type { SearchServices } from '../search-services.js';
import { baseConditions, policyCondition } from './base-conditions.js';
import { scopeOf } from '../../storage/project-scope.js';
import { orderedWhenUnfiltered, parseControl, type ResultControl } from './control.js';
import { compileFilters, dateRangeConditions, resolveFilters, type Filter } from './filters.js';
import { Leniency } from './leniency.js';
import { checkSearchSize } from './limits.js';
import { parsePaging, type PagingRequest } from './paging.js';
import { expandValueSets, type ValueSets } from './value-set-discovery.js';
import { writeDependency } from './write-dependency.js';

/**
 * A search request parsed once: its result control, its filters (each name resolved once, each
 * compiled into the whole search's conditions), its value sets expanded, its paging checked. The
 * page strategies, the total and the includes read it and parse nothing again.
 */
export interface SearchQuery {
  /** The caller's services, with the searching project's SearchParameters. */
  readonly services: SearchServices;
  /** The searched types: one for a type search, several or undefined (every type) for a system search. */
  readonly typeList: readonly string[] | undefined;
  /** The types parameters are looked up on (`Resource` for every type). */
  readonly paramTypes: readonly string[];
  readonly params: readonly [string, string][];
  readonly control: ResultControl;
  readonly scope: Scope;
  readonly valueSets: ValueSets | undefined;
  /** The compile context of the whole search's statement on `r`; its arguments are those of `where`. */
  readonly ctx: CompileContext;
  /** The whole search's conditions on `r`: base conditions, filters and date range hints. */
  readonly where: string;
  readonly filters: readonly Filter[];
  /** A filter selects by a key: every statement's best plan is the same whatever the values (QueryOptions.planOnce). */
  readonly planOnce: boolean;
  readonly paging: PagingRequest;
  readonly leniency: Leniency;
  /** Whose writes void the search's kept answers; undefined when none is kept. */
  readonly dependency: WriteDependency | undefined;
}

/**
 * Parses a search of `types` for the caller of `services`; throws the 400 of a bad request (some are
 * warnings under `lenient`; a search over the size limits never is).
 */
export async function parseQuery(
  services: SearchServices,
  types: string | readonly string[] | undefined,
  params: readonly [string, string][],
  lenient: boolean,
): Promise<SearchQuery> {
  checkSearchSize(params, services.config);
  const leniency = new Leniency(lenient);
  const typeList = typeListOf(types);
  const paramTypes = typeList ?? ['Resource'];
  const parameters = services.parameters ?? (await parametersForSearch(services.primary ?? services.db, services.identity, params));
  services = { ...services, parameters };
  const asked = parseControl(params, paramTypes, parameters, leniency);
  const scope = scopeOf(services.identity);
  const requested = resolveFilters(params, paramTypes, parameters);
  const valueSets = await expandValueSets(services, scope, typeList, { filters: requested, types: paramTypes });
  const identity = services.identity;
  const mayRead = (type: string) => policyAllowsType(identity, type);
  const criteriaOf = (type: string, alias: string, at: CompileContext) => policyCondition(identity, type, at, 'probe', alias);
  const ctx: CompileContext = { args: new SqlArgs(), scope, fhirBase: services.config.fhirBaseUrl, depth: 0, valueSets, parameters, mayRead, criteriaOf };
  const where = baseConditions(services.identity, typeList, scope, ctx, 'probe-non-keys');
  const { filters, conditions, ignored } = compileFilters(requested, paramTypes, ctx, leniency);
  const control = orderedWhenUnfiltered(asked, typeList, filters.map(({ name }) => name));
  where.push(...conditions, ...dateRangeConditions(filters, paramTypes, ctx));
  const planOnce = filters.some(({ name, value, resolved }) => selectsByKey(name, value, resolved));
  const paging = parsePaging(services.config.fhirBaseUrl, typeList, params, control, filters, ignored);
  // Wherever answers are kept: a page (embedded database, or read ahead by the HTTP layer) or an exact total.
  const dependency = services.searchCache !== undefined ? writeDependency(services.identity, scope, typeList, filters) : undefined;
  return { services, typeList, paramTypes, params, control, scope, valueSets, ctx, where: where.join(' AND '), filters, planOnce, paging, leniency, dependency };
}

function typeListOf(types: string | readonly string[] | undefined): string[] | undefined {
  const typeList = typeof types === 'string' ? [types] : types ? [...types] : undefined;
  for (const type of typeList ?? []) {
    if (!isResourceType(type)) throw errors.notSupported(`Unknown resource type "${type}"`);
  }
  return typeList;
}

/** Whether the search reads a page of matches (not `_summary=count` nor `_count=0`). */
export function readsPage({ control }: SearchQuery): boolean {
  return control.summary !== 'count' && control.count > 0;
}

/** Whether the search answers a total. */
export function wantsTotal({ control }: SearchQuery): boolean {
  return control.summary === 'count' || control.total !== 'none';
}
