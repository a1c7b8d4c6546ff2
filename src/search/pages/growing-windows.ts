import type { Filter } from '../plan/filters.js';
import { policyCriteria } from '../../identity/policy.js';
import type { CompileContext } from '../query/conditions/types.js';
import { candidateConditions, firstWindow, freshContext, joinByPrimaryKey, type DrivenSearch } from './driven.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/** Growing windows grow this many times when they fall short, up to the most rows read before the general statement answers. */
const WINDOW_GROWTH = 8;
export const GROWING_WINDOW_MAX = 6_400;
/**
 * Index rows the last window of a deep page reads per row it needs (offset + count + 1): as many
 * as the first pages' last window reads for a page at `_offset=200`, so a deep page goes to the
 * general statement only when its filters are as rare among the rows as they must be for a first
 * page to.
 */
const DEEP_ROWS_PER_MATCH = 32;

/**
 * The last window a page of one project reads before the general statement: GROWING_WINDOW_MAX,
 * or DEEP_ROWS_PER_MATCH rows per row a deeper page needs. With one last window for every offset,
 * a page past `_offset` ~300 whose filters a twentieth of the rows meet (two common codes) found
 * fewer matches than its offset in it, and one past ~1,580 read no window at all; the general
 * statement then ran away without statistics.
 */
export function lastWindow(page: PageShape): number {
  return Math.min(page.windowCap ?? Infinity, Math.max(page.windowFloor ?? 0, GROWING_WINDOW_MAX, DEEP_ROWS_PER_MATCH * (page.offset + page.count + 1)));
}

/** Whether a page's last window is larger than a first page's (past `_offset` ~180). */
export function deepPage(page: PageShape): boolean {
  return lastWindow({ ...page, windowCap: undefined, windowFloor: undefined }) > GROWING_WINDOW_MAX;
}

/**
 * Whether a window's rows that meet the filters stand for resources that meet the search, so that
 * its page is cut before any resource is read: index rows stand for live resources of their
 * project and type, unless an AccessPolicy or `_lastUpdated` tests the resource itself.
 */
export function impliedByIndexRows(search: Pick<DrivenSearch, 'services' | 'type'>, filters: readonly Filter[]): boolean {
  return !policyCriteria(search.services.identity, search.type) && !filters.some(({ name }) => name.split(':')[0] === '_lastUpdated');
}

/**
 * The windows of index rows a page reads until one yields it: the first, then eightfold each time,
 * the last one `last` (a first window of 884 rows, for `_offset=200`, was followed by none, and the
 * general statement answered a page that 6,400 rows would have held); none when the first is larger.
 */
export function growingWindows(page: PageShape, last = GROWING_WINDOW_MAX): number[] {
  const windows: number[] = [];
  for (let window = firstWindow(page); window <= last; window *= WINDOW_GROWTH) windows.push(window);
  if (windows.length > 0 && windows[windows.length - 1] < last) windows.push(last);
  return windows;
}

/**
 * A page read from a window of index rows in the page's order whose resources are tested against
 * `filters` before any is read:
 *  - sorted by one date or string parameter (`Observation?code=..&_sort=-date`,
 *    `Patient?_sort=family`): that parameter's rows (sortWindow), instead of computing the sort
 *    value of every match (50,000 for a common code, 100,000 Patients by family; bench/RESULTS.md);
 *  - unsorted, a token code with other filters (`Observation?code=..&status=final`): the code's
 *    rows (tokenCodeMatches), instead of a plan that depended on where the project's rows lie
 *    among other projects'.
 * The window's resources are the first ones of the whole order, so when they yield the page and
 * one more row, that is the page; otherwise the window grows eightfold, and past its
 * lastWindow (filters that few of the rows meet, a small project, resources without
 * a value, which sort last) undefined: the general statement, which then has few matches to sort
 * or a small project to read, answers; unless `holdsEveryRow` says the window held every row
 * there is (a token code's last page): then the page is the window's, in the same order as the
 * pages before it. The filters are tested on the window's rows (a subplan each, as
 * keyDrivenConditions does), so only the resources that meet them are read.
 */
export async function growingWindowPage(
  search: DrivenSearch,
  matches: (ctx: CompileContext, window: number) => string,
  direction: 'ASC' | 'DESC',
  filters: readonly Filter[],
  page: PageShape,
  holdsEveryRow?: (window: number) => Promise<boolean>,
): Promise<PageRows | undefined> {
  const onlyImplied = impliedByIndexRows(search, filters);
  for (const window of growingWindows(page, lastWindow(page))) {
    const ctx = freshContext(search);
    const { candidates, onResource: where } = candidateConditions(search, filters, ctx);
    const rowsOf =
      `SELECT ${ctx.args.add(search.projectId)}::text AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", g."resourceId" AS id, g.first` +
      ` FROM (${matches(ctx, window)}) g`;
    // Rows that imply their resources skip the offset before any resource is read (a deep page read
    // and cast every skipped resource's content).
    const tested =
      `SELECT d.id, d.first FROM (${rowsOf}) d${candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : ''}` +
      (onlyImplied ? ` ORDER BY d.first ${direction}, d.id LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}` : '');
    const sql =
      `SELECT ${page.columns} FROM (${tested}) p ${joinByPrimaryKey(search, ctx, 'p.id', where.join(' AND '))}` +
      ` ORDER BY p.first ${direction}, p.id LIMIT ${ctx.args.add(page.count + 1)}` +
      (onlyImplied ? '' : ` OFFSET ${ctx.args.add(page.offset)}`);
    const rows = await runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, false);
    if (rows.more || (holdsEveryRow && (await holdsEveryRow(window)))) return rows;
  }
  return undefined;
}
