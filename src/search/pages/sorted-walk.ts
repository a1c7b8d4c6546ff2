import type { Filter } from '../plan/filters.js';
import { candidateConditions, freshContext, joinByPrimaryKey, type DrivenSearch } from './driven.js';
import { impliedByIndexRows, lastWindow } from './growing-windows.js';
import { runPage, type PageRows, type PageShape } from './rows.js';
import type { SortWalk } from './sorted-window.js';

/**
 * A page sorted by one date parameter whose filters are costly to test on each resource (a chain
 * to common targets, `subject:Patient.name=smi&_sort=-date`): one statement walks the sort
 * parameter's rows in the page's order, each resource once (sortWalk), tests the filters on each
 * in turn and stops once the page and one more row are found, after at most lastWindow(page)
 * rows; short of that, undefined (the chain's candidates, or the general statement, answer).
 * Growing windows (growingWindowPage) tested the chain on every resource of each window, the
 * smaller ones again in the larger: a page that a name prefix's Observations fill within their
 * first ~1,300 dates probed the chain on 7,300 (100, 800 and 6,400), which took most of the page's
 * time. The walk probes each resource once and no further than the page, whatever the statistics.
 */
export async function walkedSortPage(
  search: DrivenSearch,
  walk: SortWalk,
  direction: 'ASC' | 'DESC',
  filters: readonly Filter[],
  page: PageShape,
): Promise<PageRows | undefined> {
  const ctx = freshContext(search);
  const { candidates, onResource } = candidateConditions(search, filters, ctx);
  const tested = walk(ctx, lastWindow(page), ctx.args.add(search.projectId), candidates.length > 0 ? candidates.join(' AND ') : undefined);
  // No ORDER BY before the LIMIT: the walk's rows come in the page's order, and a sort would test
  // every row of the walk first. Rows that imply their resources skip the offset before any is read.
  const limit = ` LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  const onlyImplied = impliedByIndexRows(search, filters);
  const read = `SELECT p.first, r.* FROM (SELECT t.id, t.first FROM (${tested}) t${onlyImplied ? limit : ''}) p ${joinByPrimaryKey(search, ctx, 'p.id', onResource.join(' AND '))}${onlyImplied ? '' : limit}`;
  const sql = `SELECT ${page.columns} FROM (${read}) r ORDER BY r.first ${direction}, r.id`;
  const rows = await runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, false);
  return rows.more ? rows : undefined;
}
