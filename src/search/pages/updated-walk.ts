import type { Filter } from '../plan/filters.js';
import type { SortKey } from '../plan/control.js';
import { candidateConditions, freshContext, type DrivenSearch } from './driven.js';
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
 * orders them), the filters tested on each in turn and the walk stopped at the page and one more;
 * short of that, undefined (a filter's candidates, or the general statement, answer). Without
 * statistics the general statement started from the chain's references to its targets and ran
 * for about 17 s; analyzed it walked that index, as this does whatever the statistics.
 */
export async function updatedWalkPage(search: DrivenSearch, descending: boolean, filters: readonly Filter[], page: PageShape): Promise<PageRows | undefined> {
  const ctx = freshContext(search);
  const { candidates, onResource } = candidateConditions(search, filters, ctx);
  const direction = descending ? 'DESC' : 'ASC';
  const order = ` ORDER BY r."lastUpdated" ${direction}, r.id ${direction}`;
  const walked =
    `SELECT * FROM resource r WHERE r."projectId" = ${ctx.args.add(search.projectId)} AND r."resourceType" = ${ctx.args.add(search.type)}` +
    `${order} LIMIT ${ctx.args.add(lastWindow(page))}`;
  // One `IS TRUE` test per walked resource (subplans in order), after the walk's own order: the
  // rows come in the page's order, so the outer ORDER BY needs no sort and the LIMIT stops the walk.
  const sql =
    `SELECT ${page.columns} FROM (${walked}) r CROSS JOIN LATERAL (SELECT r."projectId", r."resourceType", r.id) d` +
    ` WHERE (${[...candidates, ...onResource].join(' AND ')}) IS TRUE${order} LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  // Planned once, as inLastUpdatedOrderAlone's page is: planned for its values without statistics,
  // PostgreSQL guessed ~120 resources of the type and read every one of the project's (1,000,000)
  // by a bitmap or sequential scan to sort them; the plan-once pool prices those scans out.
  const rows = await runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, true);
  return rows.more ? rows : undefined;
}
