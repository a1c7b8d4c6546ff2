import type { SortKey } from '../plan/control.js';
import type { CompileContext } from '../query/conditions/types.js';
import { dateSortMatches } from '../query/conditions/date.js';
import { stringSortMatches } from '../query/conditions/string.js';
import type { DrivenSearch } from './driven.js';

/**
 * The rows a page sorted by one date or string parameter reads in its order (growingWindowPage):
 * the parameter's index rows from the migration 0015 index (dates) or the string index, else
 * undefined.
 */
export function sortWindow(search: DrivenSearch, sort: readonly SortKey[]): ((ctx: CompileContext, window: number) => string) | undefined {
  if (!hasSortWindow(sort)) return undefined;
  const { code, descending, param } = sort[0];
  const matches = param?.type === 'date' ? dateSortMatches : stringSortMatches;
  return (ctx, window) => matches(code, descending, search.type, search.projectId, ctx, window);
}

/** Whether a page in `sort`'s order can be read from its parameter's index rows (sortWindow). */
export function hasSortWindow(sort: readonly SortKey[]): boolean {
  return sort.length === 1 && !sort[0].code.startsWith('_') && (sort[0].param?.type === 'date' || sort[0].param?.type === 'string');
}
