import type { SearchParameter } from '../../fhir/definitions.js';
import type { ProjectParameters } from '../../indexing/parameters.js';
import { compileResolved, resolveParameter } from '../query/conditions.js';
import { type CompileContext, type ResolvedParameter } from '../query/conditions/types.js';
import { dateBoundKind } from '../query/conditions/date.js';
import { dateRangeCondition } from '../query/conditions/date-range.js';
import type { Scope } from '../../storage/project-scope.js';
import { splitOr, unescape } from '../query/values.js';
import { CONTROL } from './control.js';
import type { Leniency } from './leniency.js';

/** The filters of a search: its parameters that are not result control, each name resolved once. */

export interface Filter {
  readonly name: string;
  readonly value: string;
  readonly resolved: ResolvedParameter;
}

/** A parameter of the request as resolved: a filter, or the error its name gave (raised when the search compiles it). */
export interface RequestedFilter {
  /** Its position among the request's parameters. */
  readonly index: number;
  readonly name: string;
  readonly value: string;
  readonly resolved: ResolvedParameter | { readonly kind: 'unresolved'; readonly error: unknown };
}

export function resolveFilters(
  params: readonly [string, string][],
  types: readonly string[],
  parameters: ProjectParameters | undefined,
): RequestedFilter[] {
  const requested: RequestedFilter[] = [];
  for (const [index, [name, value]] of params.entries()) {
    if (CONTROL.has(name)) continue;
    let resolved: RequestedFilter['resolved'];
    try {
      resolved = resolveParameter(name, types, parameters);
    } catch (error) {
      resolved = { kind: 'unresolved', error };
    }
    requested.push({ index, name, value, resolved });
  }
  return requested;
}

/**
 * The requested filters' conditions on `r`, in `ctx`, in the order of the request: a filter that
 * fails is ignored under lenient handling (leaving no arguments behind), else its 400 is thrown.
 */
export function compileFilters(
  requested: readonly RequestedFilter[],
  types: readonly string[],
  ctx: CompileContext,
  leniency: Leniency,
): { filters: Filter[]; conditions: string[]; ignored: Set<number> } {
  const filters: Filter[] = [];
  const conditions: string[] = [];
  const ignored = new Set<number>();
  for (const request of requested) {
    const mark = ctx.args.values.length;
    const compiled = leniency.tolerate(() => compileRequested(request, types, ctx));
    if (compiled === undefined) {
      ctx.args.values.length = mark;
      ignored.add(request.index);
    } else {
      conditions.push(compiled.condition);
      filters.push(compiled.filter);
    }
  }
  return { filters, conditions, ignored };
}

/** A requested filter and its condition on `r`, or the 400 its name or its value gives. */
function compileRequested({ name, value, resolved }: RequestedFilter, types: readonly string[], ctx: CompileContext): { filter: Filter; condition: string } {
  if (resolved.kind === 'unresolved') throw resolved.error;
  const filter: Filter = { name, value, resolved };
  return { filter, condition: filterCondition(filter, types, 'r', ctx) };
}

/** A filter's condition on `alias`, a resource of `types` (the search's), in the statement of `ctx`. */
export function filterCondition(filter: Filter, types: readonly string[], alias: string, ctx: CompileContext): string {
  return compileResolved(filter.name, filter.resolved, filter.value, types, alias, ctx);
}

/** The definition of a filter on a parameter of its own: no modifier, chain or `_has`, not a `_` parameter. */
export function plainParameter(filter: Filter): SearchParameter | undefined {
  const { resolved } = filter;
  return resolved.kind === 'indexed' && resolved.modifier === undefined && !filter.name.startsWith('_') ? resolved.param : undefined;
}

/** Whether a parameter name ends in the `:in` or `:not-in` modifier (also at the end of a chain or `_has`). */
export function usesValueSet(name: string): boolean {
  return name.endsWith(':in') || name.endsWith(':not-in');
}

/**
 * For each date parameter given both a lower (ge, gt) and an upper (le, lt) bound, one value
 * each, the redundant condition an index serves (dateRangeCondition): without it the planner can
 * only walk the resources, as neither bound alone is selective.
 */
export function dateRangeConditions(filters: readonly Filter[], types: readonly string[], ctx: CompileContext, alias = 'r'): string[] {
  const lowers = new Map<string, Filter>();
  const uppers = new Map<string, Filter>();
  for (const filter of filters) {
    const kind = dateBoundKind(filter.value);
    const bounds = kind === 'lower' ? lowers : kind === 'upper' ? uppers : undefined;
    if (bounds && !bounds.has(filter.name)) bounds.set(filter.name, filter);
  }
  const conditions: string[] = [];
  for (const [name, lower] of lowers) {
    const upper = uppers.get(name);
    if (upper === undefined || plainParameter(lower)?.type !== 'date') continue;
    const mark = ctx.args.values.length;
    const condition = dateRangeCondition(name, lower.value, upper.value, types, alias, ctx);
    if (condition) conditions.push(condition);
    else ctx.args.values.length = mark;
  }
  return conditions;
}

/** The one project a search reads: the caller's, or the one `_project` names (super admins). */
export function searchedProject(scope: Scope, filters: readonly Filter[]): string | undefined {
  if (scope.projectIds) return scope.projectIds.length === 1 ? scope.projectIds[0] : undefined;
  const named = namedProjects(filters);
  return named?.length === 1 ? named[0] : undefined;
}

/** The projects every `_project` filter of the search allows (each lists its projects, and they all hold); undefined without one. */
export function namedProjects(filters: readonly Filter[]): string[] | undefined {
  const lists = filters.filter(({ name }) => name === '_project').map(({ value }) => splitOr(value).map(unescape));
  if (lists.length === 0) return undefined;
  return [...new Set(lists[0])].filter((id) => lists.every((list) => list.includes(id)));
}
