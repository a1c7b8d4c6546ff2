import { filterCondition, plainParameter, type Filter } from '../plan/filters.js';
import type { CompileContext, IndexRowsCondition } from '../query/conditions/types.js';
import { indexRowsSource, rowsOfEachCode } from '../query/conditions/shared.js';
import { stringPrefixRange } from '../query/conditions/string.js';
import { namesTokenCode } from '../query/conditions/token.js';
import { splitOr } from '../query/values.js';
import type { DrivenSearch } from './driven.js';

/**
 * How many index rows a list of values (`name=smith42,johnson42`, `code=a,b`) may have to drive
 * its page as a key does: as many as a chain's references read first. A list with more is common
 * enough for the walks and windows that find a page among the first resources of an order.
 */
export const VALUE_LIST_ROWS = 6_400;

/**
 * Whether a filter lists several values of a parameter whose each value is a seek of its index:
 * a string prefix or `:exact`, a token code. (References to given resources and identifiers are
 * keys, keyDrivenConditions.)
 */
export function isValueList(filter: Filter): boolean {
  const { resolved } = filter;
  if (resolved.kind !== 'indexed' || filter.name.startsWith('_') || splitOr(filter.value).length < 2) return false;
  const { param, modifier } = resolved;
  if (param.type === 'string') return modifier === undefined || modifier === 'exact';
  return param.type === 'token' && modifier === undefined && splitOr(filter.value).every(namesTokenCode);
}

/**
 * The index rows of `filter` in the search's project as (projectId, resourceType, id): of each of
 * its values read alone, joined by UNION ALL, so that each is one seek of its index whatever the
 * plan. As one condition (`x.targetId = $1 OR x.targetId = $2 ...`), a generic plan read every
 * row of the parameter in the project to test the list on it (`subject=Patient/1,Patient/2`:
 * 1,000,000 reference rows for 30 matches), and a string prefix given as an argument (LIKE $1)
 * leaves no range to seek. A resource matching two values is listed twice; its id is read once.
 * Undefined when a value's condition is not plain index rows.
 */
export function eachValueRows(search: DrivenSearch, filter: Filter, ctx: CompileContext): string | undefined {
  const sources: string[] = [];
  for (const value of splitOr(filter.value)) {
    const source = prefixRows(search, { ...filter, value }, ctx) ?? ownRows(search, { ...filter, value }, ctx);
    if (source === undefined) return undefined;
    sources.push(`(${source})`);
  }
  return sources.join(' UNION ALL ');
}

/** The rows of a filter's one value as its condition names them (its IndexRowsCondition), in the search's project; undefined when not index rows. */
export function ownRows(search: DrivenSearch, filter: Filter, ctx: CompileContext): string | undefined {
  let key: IndexRowsCondition | undefined;
  const condition = filterCondition(filter, [search.type], 'r', { ...ctx, onRows: (found) => (key = found) });
  if (!key || key.depth !== 0 || !condition.startsWith('EXISTS (')) return undefined;
  const scope = `${key.alias}."projectId" = ${ctx.args.add(search.projectId)} AND ${key.alias}."resourceType" = ${ctx.args.add(search.type)}`;
  return indexRowsSource(key, scope);
}

/** The rows of a one-value string prefix, as the range of index values it covers (stringPrefixRange), which a generic plan seeks. */
function prefixRows(search: DrivenSearch, filter: Filter, ctx: CompileContext): string | undefined {
  const param = plainParameter(filter);
  const range = param?.type === 'string' ? stringPrefixRange(param.code, filter.value) : undefined;
  if (!range) return undefined;
  const { args } = ctx;
  const bounds = ` AND w.value ~>=~ ${args.add(range.lower)} AND w.value ~<~ ${args.add(range.upper)}`;
  const select = (codeRows: string) => `SELECT w."projectId", w."resourceType", w."resourceId" AS id FROM string_index w WHERE ${codeRows}${bounds}`;
  return rowsOfEachCode(args.add(search.projectId), search.type, range.code, ctx, select);
}
