import type { SortKey } from '../plan/control.js';
import type { Filter } from '../plan/filters.js';
import { tokenCodeRowsIn } from '../query/conditions/token.js';
import type { CompileContext } from '../query/conditions/types.js';
import { conditionsOnCandidates, conditionsOnResource, freshContext, joinByPrimaryKey, type AnyProjectSearch } from './driven.js';
import { sortExpression } from './general.js';
import { impliedByIndexRows } from './growing-windows.js';
import { rarestTokenCode } from './token-code.js';

/** A super admin's search of one type over every project, sorted by one parameter. */
export interface EveryProjectCodeSearch extends AnyProjectSearch {
  filters: readonly Filter[];
  sort: readonly SortKey[];
}

/** The token code whose rows a page is read from, and the other filters, probed per resource. */
export interface DrivingCode {
  filter: Filter;
  others: Filter[];
}

/** The first rows of the projects with few rows of the search's token code, the other projects, and the code. */
export interface FewCodeRowsRead {
  ids: string[];
  others: string[];
  code: DrivingCode;
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
 * (drivingTokenCode). Undefined when no filter is one token code.
 */
export async function fewCodeRowsPage(search: EveryProjectCodeSearch, first: number, few: number, projects: readonly string[]): Promise<FewCodeRowsRead | undefined> {
  const code = await drivingTokenCode(search, few, projects);
  if (!code) return undefined;
  const { name, value } = code.filter;
  const ctx = freshContext(search);
  const counted = `SELECT p.id AS project, ARRAY(${tokenCodeRowsIn(name, value, search.type, 'p.id', ctx, few)}) AS ids FROM unnest(${ctx.args.add(projects)}::text[]) p(id)`;
  const bound = ctx.args.add(few);
  const rows = `SELECT DISTINCT c.project AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", m.id FROM counted c CROSS JOIN LATERAL unnest(c.ids) m(id) WHERE cardinality(c.ids) < ${bound}`;
  const sql =
    `WITH counted AS MATERIALIZED (${counted}), picked AS MATERIALIZED (${matchesOf(search, code.others, ctx, rows)})` +
    ` SELECT t.id, NULL::text AS other FROM (${firstInOrder(search, ctx, first)}) t` +
    ` UNION ALL SELECT NULL, c.project FROM counted c WHERE cardinality(c.ids) >= ${bound}`;
  const read = await search.services.db.query<{ id: string | null; other: string | null }>(sql, ctx.args.values);
  const present = (values: (string | null)[]): string[] => values.filter((v): v is string => v !== null);
  return { ids: present(read.map(({ id }) => id)), others: present(read.map(({ other }) => other)), code };
}

/**
 * The first `first` matches of `projects` in the page's order read from every row of the token
 * code `code` in each of them, as fewCodeRowsPage reads the projects with few: for projects whose
 * sort rows no window reached the page in (a page deeper than the largest window, or a code that
 * a twentieth of the rows have at an offset of a thousand). Its cost is the code's index rows in
 * those projects and a probe of each one's sort value, whatever the statistics say; the general
 * statement either did the same and read every resource too (never analyzed) or read the whole
 * resource table once per project (analyzed).
 */
export async function everyCodeRowPage(search: EveryProjectCodeSearch, code: DrivingCode, first: number, projects: readonly string[]): Promise<string[]> {
  const { name, value } = code.filter;
  const ctx = freshContext(search);
  const codeRows = tokenCodeRowsIn(name, value, search.type, 'p.id', ctx, EVERY_ROW);
  const rows = `SELECT DISTINCT p.id AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", w."resourceId" AS id FROM unnest(${ctx.args.add(projects)}::text[]) p(id) CROSS JOIN LATERAL (${codeRows}) w`;
  const sql = `WITH picked AS MATERIALIZED (${matchesOf(search, code.others, ctx, rows)}) ${firstInOrder(search, ctx, first)}`;
  const read = await search.services.db.query<{ id: string }>(sql, ctx.args.values);
  return read.map(({ id }) => id);
}

/** A limit no project's rows of a code reach: every row. */
const EVERY_ROW = Number.MAX_SAFE_INTEGER;

/**
 * The token code that drives an every-project page: of several, the one with the fewest rows
 * (rarestTokenCode), each project's counted up to `few` (codeRowsUpTo). Undefined when no filter
 * is one token code.
 */
export function drivingTokenCode(search: EveryProjectCodeSearch, few: number, projects: readonly string[]): Promise<DrivingCode | undefined> {
  return rarestTokenCode(search.filters, projects.length * few, (filter, bound) => codeRowsUpTo(search, filter, { few, bound }, projects));
}

/**
 * The resources of `rows` (columns "projectId", "resourceType", id, one row each) that meet the
 * filters `others`, each with its sort value `v`: the filters probed per resource, the resource
 * itself read by primary key only when its index rows do not imply it.
 */
function matchesOf(search: EveryProjectCodeSearch, others: readonly Filter[], ctx: CompileContext, rows: string): string {
  const candidates = conditionsOnCandidates(search, others, ctx);
  // Arguments only for conditions the statement holds: PostgreSQL cannot type one it never mentions.
  const resources = impliedByIndexRows(search, search.filters)
    ? ''
    : ` ${joinByPrimaryKey(search, ctx, 'd.id', conditionsOnResource(search, others, ctx).join(' AND '))}`;
  return `SELECT d.id, ${sortExpression(search.sort[0], ctx.args, 'd')} AS v FROM (${rows}) d${resources}${candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : ''}`;
}

/** The first `first` ids of the statement's `picked` matches in the page's order: by sort value, those without one last, ties by id. */
function firstInOrder(search: EveryProjectCodeSearch, ctx: CompileContext, first: number): string {
  return `SELECT p.id FROM picked p ORDER BY p.v ${search.sort[0].descending ? 'DESC' : 'ASC'} NULLS LAST, p.id LIMIT ${ctx.args.add(first)}`;
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
