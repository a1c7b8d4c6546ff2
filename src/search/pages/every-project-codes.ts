import type { SortKey } from '../plan/control.js';
import type { Filter } from '../plan/filters.js';
import { tokenCodeRowsIn } from '../query/conditions/token.js';
import { conditionsOnCandidates, conditionsOnResource, freshContext, joinByPrimaryKey, type AnyProjectSearch } from './driven.js';
import { sortExpression } from './general.js';
import { impliedByIndexRows } from './growing-windows.js';
import { rarestTokenCode } from './token-code.js';

/** A super admin's search of one type over every project, sorted by one parameter. */
export interface EveryProjectCodeSearch extends AnyProjectSearch {
  filters: readonly Filter[];
  sort: readonly SortKey[];
}

/** The first rows of the projects with few rows of the search's token code, and the other projects. */
export interface FewCodeRowsRead {
  ids: string[];
  others: string[];
}

/**
 * For a search with a token code among its filters (`Observation?code=..&_sort=-date`): one
 * statement reads each project's rows of the code, up to `few`, and answers for the projects with
 * fewer from those rows: their resources' sort values read by primary key, the other
 * filters probed per resource, the first `first` of every such project's matches together, in the
 * page's order (the general page's sort value, resources without one last, ties by id). A window
 * of the sort parameter's rows would read at least `few` rows of each of them and probe the code
 * on every one, and a project of which only a few rows have the code falls short of every window
 * and has its matches sorted after all. A project whose code is common costs `few` index rows,
 * as many as its window reads. Of several token codes, the one with the fewest such rows drives
 * (rarestTokenCode, codeRowsUpTo). Undefined when no filter is one token code.
 */
export async function fewCodeRowsPage(search: EveryProjectCodeSearch, first: number, few: number, projects: readonly string[]): Promise<FewCodeRowsRead | undefined> {
  const { services, type, sort } = search;
  const code = await rarestTokenCode(search.filters, projects.length * few, (filter, bound) => codeRowsUpTo(search, filter, { few, bound }, projects));
  if (!code) return undefined;
  const { name, value } = code.filter;
  const ctx = freshContext(search);
  const counted = `SELECT p.id AS project, ARRAY(${tokenCodeRowsIn(name, value, type, 'p.id', ctx, few)}) AS ids FROM unnest(${ctx.args.add(projects)}::text[]) p(id)`;
  const bound = ctx.args.add(few);
  const candidates = conditionsOnCandidates(search, code.others, ctx);
  // Arguments only for conditions the statement holds: PostgreSQL cannot type one it never mentions.
  const resources = impliedByIndexRows(search, search.filters)
    ? ''
    : ` ${joinByPrimaryKey(search, ctx, 'd.id', conditionsOnResource(search, code.others, ctx).join(' AND '))}`;
  const matches =
    `SELECT d.id, ${sortExpression(sort[0], ctx.args, 'd')} AS v FROM (SELECT DISTINCT c.project AS "projectId", ${ctx.args.add(type)}::text AS "resourceType", m.id` +
    ` FROM counted c CROSS JOIN LATERAL unnest(c.ids) m(id) WHERE cardinality(c.ids) < ${bound}) d${resources}` +
    `${candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : ''}`;
  const direction = sort[0].descending ? 'DESC' : 'ASC';
  const sql =
    `WITH counted AS MATERIALIZED (${counted}), picked AS MATERIALIZED (${matches})` +
    ` SELECT t.id, NULL::text AS other FROM (SELECT p.id FROM picked p ORDER BY p.v ${direction} NULLS LAST, p.id LIMIT ${ctx.args.add(first)}) t` +
    ` UNION ALL SELECT NULL, c.project FROM counted c WHERE cardinality(c.ids) >= ${bound}`;
  const read = await services.db.query<{ id: string | null; other: string | null }>(sql, ctx.args.values);
  const present = (values: (string | null)[]): string[] => values.filter((v): v is string => v !== null);
  return { ids: present(read.map(({ id }) => id)), others: present(read.map(({ other }) => other)) };
}

/**
 * A token code's rows in every project, each project's counted up to `few` (the rows
 * fewCodeRowsPage would read), the sum no further than `bound`.
 */
async function codeRowsUpTo(search: EveryProjectCodeSearch, { name, value }: Filter, limits: { few: number; bound: number }, projects: readonly string[]): Promise<number> {
  const ctx = freshContext(search);
  const rows = tokenCodeRowsIn(name, value, search.type, 'p.id', ctx, limits.few);
  const sql = `SELECT count(*)::int AS n FROM (SELECT 1 FROM unnest(${ctx.args.add(projects)}::text[]) p(id) CROSS JOIN LATERAL (${rows}) w LIMIT ${ctx.args.add(limits.bound)}) c`;
  const [row] = await search.services.db.query<{ n: number }>(sql, ctx.args.values);
  return row.n;
}
