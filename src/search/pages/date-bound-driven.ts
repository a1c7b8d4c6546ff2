import { plainParameter, type Filter } from '../plan/filters.js';
import type { SortKey } from '../plan/control.js';
import { dateBoundKind, dateCondition } from '../query/conditions/date.js';
import { rowsOfCodeIn } from '../query/conditions/shared.js';
import { parseDateValue } from '../query/values.js';
import { candidatesSortedPage, candidatesSource, type Candidates } from './candidates-sorted.js';
import { freshContext, type DrivenSearch } from './driven.js';
import { HAS_SOURCE_ROWS_MANY, WINDOWS_BEFORE_HAS_DRIVEN, type HasDriven } from './has-driven.js';
import { drivenWhere } from './key-driven.js';
import type { PageShape } from './rows.js';

/**
 * The most resources a one-sided date bound may name for them to drive a sorted page before its
 * windows (as few as the first window reads: a common bound costs the page no more than that), and
 * after the windows fell short, before the general statement (as many as a driver's candidates).
 */
export const DATE_BOUND_FEW = WINDOWS_BEFORE_HAS_DRIVEN;
export const DATE_BOUND_MANY = HAS_SOURCE_ROWS_MANY;

/**
 * The conditions of a sorted page of one project driven by a one-sided date bound that few
 * resources meet (`Observation?date=lt2010-01-01&_sort=-date`): its resources are the candidates,
 * every filter (the bound too) tested on each, and a page sorted by index rows reads them sorted
 * on their own rows (candidatesSortedPage). Undefined when no filter is such a bound or it names
 * more than `most` resources. The sort's windows find few matches of a rare
 * bound, and without statistics the general statement then read the code's every date row to
 * test the bound (`start < $1 OR start IS NULL` is no index condition), however few it meets.
 */
export async function dateBoundDriven(search: DrivenSearch, filters: readonly Filter[], most: number): Promise<HasDriven | undefined> {
  const bound = filters.find((filter) => plainParameter(filter)?.type === 'date' && dateBoundKind(filter.value) !== undefined);
  const ids = bound && (await boundCandidates(search, bound, most));
  if (!ids) return undefined;
  const candidates: Candidates = { projects: ids.map(() => search.projectId), ids };
  const ctx = freshContext(search);
  const source = candidatesSource(search.type, candidates, ctx.args);
  const sortedPage = (sort: readonly SortKey[], page: PageShape) => candidatesSortedPage(search, candidates, filters, sort, page);
  return { ...drivenWhere(search, filters, ctx, source), sortedPage };
}

/**
 * The resources whose rows meet `bound` (each once), or undefined past `most` rows. An upper bound (`lt`, `le`) is met only by rows starting by the value's end or open at
 * their start, a lower bound only by rows ending from its start or open at their end. The first
 * are a range of the sort index on the row's near edge (migration 0015: COALESCE(start, end)
 * ascending, COALESCE(end, start) descending), read in its order, which no other index gives;
 * the others are the partial index of rows open on that side (migration 0034). Without
 * statistics, a range on a plain column of an index of the same prefix lost to another index of
 * that prefix, which read the code's every row to test it. The bound itself is tested on each row.
 */
async function boundCandidates(search: DrivenSearch, bound: Filter, most: number): Promise<string[] | undefined> {
  const ctx = freshContext(search);
  const { range } = parseDateValue(bound.name, bound.value);
  const upper = dateBoundKind(bound.value) === 'upper';
  const limit = ctx.args.add(most + 1);
  const side = (edge: string, order: string): string =>
    `(SELECT w."resourceId" FROM date_index w WHERE ${rowsOfCodeIn(ctx.args.add(search.projectId), search.type, bound.name, ctx)}` +
    ` AND ${edge} AND (${dateCondition(bound.name, bound.value, 'w.start', 'w."end"', ctx)}) IS TRUE${order} LIMIT ${limit})`;
  const near = upper ? 'COALESCE(w.start, w."end")' : 'COALESCE(w."end", w.start)';
  const within = upper ? `${near} <= ${ctx.args.add(range.end, 'timestamptz')}` : `${near} >= ${ctx.args.add(range.start, 'timestamptz')}`;
  const open = upper ? 'w.start IS NULL' : 'w."end" IS NULL';
  const rows = await search.services.db.query<{ resourceId: string }>(
    `SELECT c."resourceId" FROM (${side(within, ` ORDER BY ${near}${upper ? '' : ' DESC'}`)} UNION ALL ${side(open, '')}) c LIMIT ${limit}`,
    ctx.args.values,
  );
  return rows.length > most ? undefined : [...new Set(rows.map(({ resourceId }) => resourceId))];
}
