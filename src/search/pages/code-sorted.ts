import type { Filter } from '../plan/filters.js';
import type { SortKey } from '../plan/control.js';
import { tokenCodeMatches } from '../query/conditions/token.js';
import { candidateConditions, freshContext, joinByPrimaryKey, type DrivenSearch } from './driven.js';
import { sortExpression } from './general.js';
import { deepPage, impliedByIndexRows } from './growing-windows.js';
import { runPage, type PageRows, type PageShape } from './rows.js';
import { codeRowsInProject, rarestTokenCode } from './token-code.js';

/**
 * Index rows of a token code per row a deep sorted page needs (offset + count + 1) up to which the
 * code's rows, sorted, give the page instead of the sort parameter's windows: twice the first
 * window's rows (firstWindow), so sorting the code's rows never reads more than windows that held
 * the page at their second try. `status=final&code=..&_sort=-date&_offset=10000` read 323,000 date
 * rows in windows, each probed for both codes, to find the 10,100 matches among the code's 50,000.
 */
const CODE_ROWS_PER_MATCH = 8;

/**
 * A deep page sorted by one date or string parameter (sortWindow) driven by the rarest token code
 * among its filters when that code has few rows for the page's depth (CODE_ROWS_PER_MATCH): every
 * row of the code, tested against the other filters, is given its sort value as the general
 * statement computes it (sortExpression, per resource through the index's primary key) and sorted;
 * only the page's resources are then read. Undefined for a first page, without a token code, or
 * when the code has more rows: the windows answer.
 */
export async function codeSortedPage(search: DrivenSearch, filters: readonly Filter[], sort: readonly SortKey[], page: PageShape): Promise<PageRows | undefined> {
  if (!deepPage(page)) return undefined;
  const bound = CODE_ROWS_PER_MATCH * (page.offset + page.count + 1);
  const counted = new Map<Filter, number>();
  const count = async (filter: Filter, most: number): Promise<number> => {
    const rows = await codeRowsInProject(search, filter, most);
    counted.set(filter, rows < most ? rows : Infinity);
    return rows;
  };
  const code = await rarestTokenCode(filters, bound, count);
  if (!code) return undefined;
  const rows = counted.get(code.filter) ?? (await count(code.filter, bound));
  if (!(rows < bound)) return undefined;
  const ctx = freshContext(search);
  const { name, value } = code.filter;
  const { candidates, onResource: where } = candidateConditions(search, code.others, ctx);
  const key = sort[0];
  const order = `${key.descending ? 'DESC' : 'ASC'} NULLS LAST`;
  const candidateRows =
    `SELECT ${ctx.args.add(search.projectId)}::text AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", g."resourceId" AS id` +
    ` FROM (${tokenCodeMatches(name, value, search.type, search.projectId, ctx, bound)}) g`;
  const implied = impliedByIndexRows(search, code.others);
  // Rows that imply their resources are sorted and cut to the page before any resource is read.
  const sorted =
    `SELECT d.id, ${sortExpression(key, ctx.args, 'd')} AS first FROM (${candidateRows}) d` +
    (candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : '') +
    (implied ? ` ORDER BY first ${order}, d.id LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}` : '');
  const sql =
    `SELECT ${page.columns} FROM (${sorted}) p ${joinByPrimaryKey(search, ctx, 'p.id', where.join(' AND '))}` +
    ` ORDER BY p.first ${order}, p.id LIMIT ${ctx.args.add(page.count + 1)}` +
    (implied ? '' : ` OFFSET ${ctx.args.add(page.offset)}`);
  return runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, false);
}
