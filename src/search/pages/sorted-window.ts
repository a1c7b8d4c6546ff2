import type { SortKey } from '../plan/control.js';
import type { CompileContext } from '../query/conditions/types.js';
import { dateSortMatches, dateSortWalk } from '../query/conditions/date.js';
import { orderedRowsOfCode } from '../query/conditions/shared.js';
import { stringSortMatches } from '../query/conditions/string.js';
import type { DrivenSearch } from './driven.js';

/** The rows of a sort window of `type` in one project (`project`: its id as an SQL expression). */
export type ProjectSortWindow = (ctx: CompileContext, window: number, project: string) => string;

/**
 * The rows a page sorted by one date or string parameter reads in its order (growingWindowPage):
 * the parameter's index rows from the migration 0015 index (dates) or the string index, else
 * undefined.
 */
export function sortWindow(search: DrivenSearch, sort: readonly SortKey[]): ((ctx: CompileContext, window: number) => string) | undefined {
  const rows = projectSortWindow(search.type, sort);
  return rows && ((ctx, window) => rows(ctx, window, ctx.args.add(search.projectId)));
}

/** sortWindow for any project of `type`: the statement names the project (a column of each project's row, everyProjectSortedPage). */
export function projectSortWindow(type: string, sort: readonly SortKey[]): ProjectSortWindow | undefined {
  if (!hasSortWindow(sort)) return undefined;
  const { code, descending, param } = sort[0];
  const matches = param?.type === 'date' ? dateSortMatches : stringSortMatches;
  return (ctx, window, project) => matches(code, descending, type, project, ctx, window);
}

/**
 * The rows (projectId, resourceType, id, first) a page walks (dateSortWalk), those of one project
 * (`project`: its id as an SQL expression) that meet `test` (a condition on `d`, or none).
 */
export type SortWalk = (ctx: CompileContext, window: number, project: string, test: string | undefined) => string;

/** The walk of a page sorted by one date parameter (dateSortWalk), for a statement that stops at its page; else undefined. */
export function sortWalk(sort: readonly SortKey[], type: string): SortWalk | undefined {
  if (!hasSortWindow(sort) || sort[0].param?.type !== 'date') return undefined;
  const { code, descending } = sort[0];
  return (ctx, window, project, test) => dateSortWalk(code, descending, type, project, ctx, window, test);
}

/**
 * How many rows of the sort parameter a project has (`project`: its id as an SQL expression),
 * counted up to `bound`: fewer than a window's size, and the window held every one of them. Read
 * in the order of the parameter's sort index: with statistics that spread rows evenly over the
 * projects, an unordered LIMIT was read by a sequential scan, which for a project with no rows
 * filtered the whole table.
 */
export function sortRowsUpTo(type: string, sort: readonly SortKey[], ctx: CompileContext, bound: number, project: string): string {
  const limit = ctx.args.add(bound);
  const { code } = sort[0];
  const rows =
    sort[0].param?.type === 'date'
      ? orderedRowsOfCode(project, type, code, ctx, (of) => `SELECT w."resourceId" AS v FROM date_index w WHERE ${of}`, 'COALESCE(w.start, w."end"), w."resourceId"', 'u.v', limit)
      : orderedRowsOfCode(
          project,
          type,
          code,
          ctx,
          (of) => `SELECT w."resourceId", w.value COLLATE "C" AS v FROM string_index w WHERE ${of}`,
          'w.value USING ~<~, w."resourceId"',
          'u.v USING ~<~, u."resourceId"',
          limit,
        );
  return `(SELECT count(*) FROM (${rows}) c)`;
}

/** Whether a page in `sort`'s order can be read from its parameter's index rows (sortWindow). */
export function hasSortWindow(sort: readonly SortKey[]): boolean {
  return sort.length === 1 && !sort[0].code.startsWith('_') && (sort[0].param?.type === 'date' || sort[0].param?.type === 'string');
}
