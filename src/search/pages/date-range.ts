import { plainParameter, type Filter } from '../plan/filters.js';
import { dateBoundKind } from '../query/conditions/date.js';
import { dateRangeRows } from '../query/conditions/date-range.js';
import { splitOr, takePrefix } from '../query/values.js';
import { joinByPrimaryKey, loneFilter, otherConditions, type DrivenSearch } from './driven.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/**
 * A date parameter's lower and upper bound among a search's filters (dateRangeConditions' first
 * pair), or a lone one of them (the other side open), and the other filters.
 */
export interface DateRangePair {
  name: string;
  lower?: string;
  upper?: string;
  others: Filter[];
}

function isDate(filter: Filter): boolean {
  return plainParameter(filter)?.type === 'date';
}

/** The first pair of bounds on a date parameter, or a lone bound (openDateRange). */
export function dateRangePair(filters: readonly Filter[]): DateRangePair | undefined {
  const boundAt = (name: string, kind: 'lower' | 'upper'): number => filters.findIndex((f) => f.name === name && dateBoundKind(f.value) === kind);
  for (const [at, filter] of filters.entries()) {
    if (!isDate(filter) || dateBoundKind(filter.value) !== 'lower' || boundAt(filter.name, 'lower') !== at) continue;
    const upperAt = boundAt(filter.name, 'upper');
    if (upperAt < 0) continue;
    return { name: filter.name, lower: filter.value, upper: filters[upperAt].value, others: filters.filter((_, i) => i !== at && i !== upperAt) };
  }
  return equalDateRange(filters) ?? openDateRange(filters);
}

/**
 * The first one-value `eq` date (`Observation?date=2023-03-01`) as the pair `ge`/`le` of its
 * value, the `eq` itself kept among the other filters. A row within the value's range (what `eq`
 * asks) meets both bounds, so the pair's rows hold every match and the `eq`, tested on each,
 * drops the periods that only overlap it. Without statistics PostgreSQL read the `eq` from an
 * index by project, type and code alone, testing the dates of every row of the code (a second
 * per page among 1,000,000 Observations); the GiST index's rows stop at the page.
 */
function equalDateRange(filters: readonly Filter[]): DateRangePair | undefined {
  for (const filter of filters) {
    if (!isDate(filter) || splitOr(filter.value).length !== 1) continue;
    const { prefix, rest } = takePrefix(filter.value);
    if (prefix === 'eq') return { name: filter.name, lower: `ge${rest}`, upper: `le${rest}`, others: [...filters] };
  }
  return undefined;
}

/**
 * A lone one-sided date bound (`Observation?date=gt2024-06-01`, besides `_project`) as a pair
 * open on its other side, so that the GiST index's rows, which stop at the page, drive it
 * (dateRangePage). No date stands for the open side: `le9999-12-31` misses a period starting on
 * that day and open-ended, which `gt2024-06-01` must find. Alone only: with other filters, a
 * bound that half the rows meet would drive a page that those filters may thin out.
 */
function openDateRange(filters: readonly Filter[]): DateRangePair | undefined {
  const lone = loneFilter(filters);
  if (!lone || !isDate(lone.filter)) return undefined;
  const { filter: { name, value }, others } = lone;
  const kind = dateBoundKind(value);
  if (kind === 'lower') return { name, lower: value, others };
  if (kind === 'upper') return { name, upper: value, others };
  return undefined;
}

/**
 * A page of a search without _sort in one project whose filters bound a date parameter from
 * both sides (`Observation?date=ge2023-03-01&date=le2023-03-01`): the resources are joined from
 * dateRangeRows (each once, in the GiST index's order), so the statement stops at the page
 * instead of de-duplicating every match. With no other filter (bar `_project`) the plan is the
 * same for every range (the index scan stops at the page however many rows the range holds), so
 * it is planned once. Undefined when the bounds make no range after all.
 */
export async function dateRangePage(search: DrivenSearch, pair: DateRangePair, page: PageShape): Promise<PageRows | undefined> {
  const { ctx, where } = otherConditions(search, pair.others);
  const source = dateRangeRows(pair.name, pair.lower, pair.upper, search.type, search.projectId, ctx);
  if (!source) return undefined;
  const sql =
    `SELECT ${page.columns} FROM (${source}) g ${joinByPrimaryKey(search, ctx, 'g."resourceId"', where)}` +
    ` LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  const planOnce = pair.others.every(({ name }) => name === '_project');
  return runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, planOnce);
}
