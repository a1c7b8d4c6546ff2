import type { SortKey } from '../plan/control.js';
import type { CompileContext } from '../query/conditions/types.js';
import { dateSortMatches } from '../query/conditions/date.js';
import { rowsOfCodeIn } from '../query/conditions/shared.js';
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
 * How many rows of the sort parameter a project has (`project`: its id as an SQL expression),
 * counted up to `bound`: fewer than a window's size, and the window held every one of them.
 */
export function sortRowsUpTo(type: string, sort: readonly SortKey[], ctx: CompileContext, bound: number, project: string): string {
  const table = sort[0].param?.type === 'date' ? 'date_index' : 'string_index';
  return `(SELECT count(*) FROM (SELECT 1 FROM ${table} w WHERE ${rowsOfCodeIn(project, type, sort[0].code, ctx)} LIMIT ${ctx.args.add(bound)}) c)`;
}

/** Whether a page in `sort`'s order can be read from its parameter's index rows (sortWindow). */
export function hasSortWindow(sort: readonly SortKey[]): boolean {
  return sort.length === 1 && !sort[0].code.startsWith('_') && (sort[0].param?.type === 'date' || sort[0].param?.type === 'string');
}
