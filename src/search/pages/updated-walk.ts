import type { Filter } from '../plan/filters.js';
import type { SortKey } from '../plan/control.js';
import type { CursorPosition } from '../query/cursor.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { candidateConditions, freshContext, type DrivenSearch } from './driven.js';
import { positionCondition } from './general.js';
import { lastWindow } from './growing-windows.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/** Whether a page is sorted by `_lastUpdated` alone, which the project's (projectId, resourceType, lastUpdated, id) index gives in order. */
export function byLastUpdatedAlone(sort: readonly SortKey[]): boolean {
  return sort.length === 1 && sort[0].code === '_lastUpdated';
}

/**
 * A page of one project sorted by `_lastUpdated` alone whose filters are costly to test on each
 * resource (a chain to common targets, `subject:Patient.gender=female&_sort=-_lastUpdated`), as
 * walkedSortPage reads a date sort: at most lastWindow(page) of the project's resources of the
 * type in the page's order (its index, ties by id in the same direction, as the general statement
 * orders them), from a cursor's position when the page has one (`_sort=_lastUpdated` pages by
 * cursor), the filters tested on each in turn and the walk stopped at the page and one more; short
 * of that, the page when the walk held every resource there is (a walk's last page), else
 * undefined (a filter's candidates, or the general statement, answer). Without statistics the
 * general statement started from the chain's references to its targets and ran for about 17 s;
 * analyzed it walked that index, as this does whatever the statistics.
 */
export async function updatedWalkPage(
  search: DrivenSearch,
  descending: boolean,
  filters: readonly Filter[],
  page: PageShape,
  position?: CursorPosition,
): Promise<PageRows | undefined> {
  const ctx = freshContext(search);
  const { candidates, onResource } = candidateConditions(search, filters, ctx);
  // A previous page walks back from its cursor; its rows are turned round (runPage).
  const backwards = position?.direction === 'p';
  const direction = descending !== backwards ? 'DESC' : 'ASC';
  const order = ` ORDER BY r."lastUpdated" ${direction}, r.id ${direction}`;
  const window = lastWindow(page);
  const walked = `SELECT * ${walkedResources(search, position, ctx.args)}${order} LIMIT ${ctx.args.add(window)}`;
  // One `IS TRUE` test per walked resource (subplans in order), after the walk's own order: the
  // rows come in the page's order, so the outer ORDER BY needs no sort and the LIMIT stops the walk.
  const sql =
    `SELECT ${page.columns} FROM (${walked}) r CROSS JOIN LATERAL (SELECT r."projectId", r."resourceType", r.id) d` +
    ` WHERE (${[...candidates, ...onResource].join(' AND ')}) IS TRUE${order} LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  // Planned once, as inLastUpdatedOrderAlone's page is: planned for its values without statistics,
  // PostgreSQL guessed ~120 resources of the type and read every one of the project's (1,000,000)
  // by a bitmap or sequential scan to sort them; the plan-once pool prices those scans out.
  const rows = await runPage(search.services.db, sql, ctx.args, page.count, backwards, page.kept, true);
  if (rows.more) return rows;
  return (await walkHeldEveryResource(search, position, order, window)) ? rows : undefined;
}

/** The FROM clause of the project's resources of the type (`r`), after (or before) a cursor's position. */
function walkedResources(search: DrivenSearch, position: CursorPosition | undefined, args: SqlArgs): string {
  const after = position ? ` AND ${positionCondition(position, false, args)}` : '';
  return `FROM resource r WHERE r."projectId" = ${args.add(search.projectId)} AND r."resourceType" = ${args.add(search.type)}${after}`;
}

/**
 * Whether a walk of `window` resources in `order` from `position` held every resource there is:
 * then a page it found short is the whole rest of the search (the last page of a cursor walk),
 * which no other plan needs to read again. One index row past the window is asked for.
 */
async function walkHeldEveryResource(search: DrivenSearch, position: CursorPosition | undefined, order: string, window: number): Promise<boolean> {
  const ctx = freshContext(search);
  const sql = `SELECT EXISTS (SELECT 1 ${walkedResources(search, position, ctx.args)}${order} OFFSET ${ctx.args.add(window)}) AS past`;
  const [{ past }] = await search.services.db.query<{ past: boolean }>(sql, ctx.args.values, { planOnce: true });
  return !past;
}
