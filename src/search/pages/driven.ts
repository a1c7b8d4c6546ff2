import { baseConditions } from '../plan/base-conditions.js';
import { dateRangeConditions, filterCondition, type Filter } from '../plan/filters.js';
import type { CompileContext } from '../query/conditions/types.js';
import { type Scope } from '../../storage/project-scope.js';
import { SqlArgs } from '../../db/sql-args.js';
import type { SearchServices } from '../search-services.js';
import type { PageShape } from './rows.js';

/**
 * A search of one type in one project, whose page a strategy reads from an index of its own
 * choosing, and what such strategies share: statements compiled anew with arguments of their
 * own, the search's other filters, and the first window of index rows.
 */
export interface DrivenSearch {
  services: SearchServices;
  type: string;
  scope: Scope;
  projectId: string;
  /** The search's compile context (its value sets, project parameters); its arguments are not reused. */
  ctx: CompileContext;
}

/** A DrivenSearch whose statement reads several projects, each row naming its own. */
export type AnyProjectSearch = Omit<DrivenSearch, 'projectId'>;

/** The search's compile context with arguments of its own, for a statement compiled anew. */
export function freshContext(search: Pick<DrivenSearch, 'ctx'>): CompileContext {
  return { ...search.ctx, args: new SqlArgs(), depth: 0, onRows: undefined };
}

/**
 * The search's conditions on the resource `r` without the filters a strategy reads itself,
 * compiled anew with arguments of their own (the strategy adds its own to them). The strategy's
 * resources are few and read by primary key, so each filter is probed per resource among its own
 * index rows (CompileContext.perRow), as the AccessPolicy criteria are: through the value index,
 * whose resourceId comes after the value, each resource of a `name=smi&birthdate=ge2010-01-01`
 * page read every birthdate row of the range up to its own, and of a date range page with
 * `status=final` every final Observation's row.
 */
export function otherConditions(search: DrivenSearch, others: readonly Filter[]): { ctx: CompileContext; where: string } {
  const ctx = freshContext(search);
  const perRow = { ...ctx, perRow: true };
  const where = [
    ...baseConditions(search.services.identity, [search.type], search.scope, ctx, 'probe'),
    ...others.map((filter) => filterCondition(filter, [search.type], 'r', perRow)),
    ...dateRangeConditions(others, [search.type], perRow),
  ];
  return { ctx, where: where.join(' AND ') };
}

/**
 * The join that reads the resources of a strategy's candidate rows (`id`: their id column) by
 * primary key only, and keeps those that meet `where`. The conditions are tested as one `IS TRUE`
 * expression, which no index serves: on data newer than the planner's statistics, a join that
 * could see `r."projectId" = ..` took the (projectId, resourceType, lastUpdated, id) index and
 * probed it with id as its fourth column, scanning every resource of the type for each candidate.
 * Each candidate is probed in a LATERAL subquery with LIMIT 1, which the planner cannot turn into
 * a join: planned while the tables were small (a generic plan, kept per connection), the join
 * read every resource of the type for each candidate and tested the id afterwards.
 */
export function joinByPrimaryKey(search: Pick<DrivenSearch, 'type'>, ctx: CompileContext, id: string, where: string): string {
  return (
    `CROSS JOIN LATERAL (SELECT * FROM resource r WHERE r."resourceType" = ${ctx.args.add(search.type)} AND r.id = ${id}` +
    ` AND (${where}) IS TRUE LIMIT 1) r`
  );
}

/**
 * A search's filters compiled in `ctx` for a statement that tests them on candidate rows `d` of
 * (projectId, resourceType, id) before it reads the resources `r`: the conditions on `d`, and
 * those on `r` (the base conditions and the filters testedOnResource).
 */
export function candidateConditions(search: AnyProjectSearch, filters: readonly Filter[], ctx: CompileContext): { candidates: string[]; onResource: string[] } {
  const candidates = conditionsOnCandidates(search, filters, ctx);
  return { candidates, onResource: conditionsOnResource(search, filters, ctx) };
}

/** candidateConditions' conditions on the candidate rows `d`. */
export function conditionsOnCandidates(search: AnyProjectSearch, filters: readonly Filter[], ctx: CompileContext): string[] {
  const onRows = filters.filter((filter) => !testedOnResource(filter));
  const perRow = { ...ctx, perRow: true };
  return [...onRows.map((filter) => filterCondition(filter, [search.type], 'd', perRow)), ...dateRangeConditions(onRows, [search.type], perRow, 'd')];
}

/** candidateConditions' conditions on the resources `r`. */
export function conditionsOnResource(search: AnyProjectSearch, filters: readonly Filter[], ctx: CompileContext): string[] {
  return [
    ...baseConditions(search.services.identity, [search.type], search.scope, ctx, 'probe'),
    ...filters.filter(testedOnResource).map((filter) => filterCondition(filter, [search.type], 'r', ctx)),
  ];
}

/**
 * Whether a filter is tested on the resource row rather than on candidate rows of
 * (projectId, resourceType, id): `_lastUpdated` reads a column only the resource has, and
 * `_project` is already the candidates' project.
 */
export function testedOnResource({ name }: Filter): boolean {
  return name === '_project' || name.split(':')[0] === '_lastUpdated';
}

/** The search's one filter besides `_project` (which `others` holds), if it has exactly one. */
export function loneFilter(filters: readonly Filter[]): { filter: Filter; others: Filter[] } | undefined {
  const others = filters.filter(({ name }) => name === '_project');
  return filters.length - others.length === 1 ? { filter: filters.find(({ name }) => name !== '_project')!, others } : undefined;
}

/** Index rows a window reads per row of the page it is for (resources with several matching values, filtered ones). */
const WINDOW_FACTOR = 4;
const WINDOW_MIN = 100;

/** How many index rows a strategy's first window reads for `page`. */
export function firstWindow(page: PageShape): number {
  return Math.max(WINDOW_MIN, WINDOW_FACTOR * (page.offset + page.count + 1));
}
