import type { Filter } from '../plan/filters.js';
import { tokenCodeMatches } from '../query/conditions/token.js';
import { freshContext, type DrivenSearch } from './driven.js';
import type { HasDriven } from './has-driven.js';
import { drivenWhere } from './key-driven.js';
import { codeRowsInProject, rarestTokenCode } from './token-code.js';

/**
 * The conditions of a sorted page of one project driven by its rarest token code's resources
 * when they are at most `most` (counted first on index rows): the other filters tested on each,
 * the resources read by primary key, then sorted. For a page whose walk or windows fell short
 * (`code=..&date=2023-03-01&_sort=-_lastUpdated`: the first resources of the order meet the code
 * but not the rest), before the general statement, which without statistics read the code's
 * resources in another order, probing every one of them.
 */
export async function tokenCodeDriven(search: DrivenSearch, filters: readonly Filter[], most: number): Promise<HasDriven | undefined> {
  const counted = new Map<Filter, number>();
  const count = async (filter: Filter, bound: number): Promise<number> => {
    const rows = await codeRowsInProject(search, filter, bound);
    counted.set(filter, rows < bound ? rows : Infinity);
    return rows;
  };
  const code = await rarestTokenCode(filters, most + 1, count);
  if (!code) return undefined;
  const rows = counted.get(code.filter) ?? (await count(code.filter, most + 1));
  if (!(rows <= most)) return undefined;
  const ctx = freshContext(search);
  const { name, value } = code.filter;
  const source =
    `SELECT ${ctx.args.add(search.projectId)}::text AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", g."resourceId" AS id` +
    ` FROM (${tokenCodeMatches(name, value, search.type, search.projectId, ctx)}) g`;
  return drivenWhere(search, code.others, ctx, source);
}
