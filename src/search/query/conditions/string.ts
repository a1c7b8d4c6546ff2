import { normaliseForIndex } from '../../../indexing/text.js';
import type { CompileContext, RowsOf } from './types.js';
import { likeEscape } from '../sql-builder.js';
import { splitOr, unescape } from '../values.js';
import { firstOfEach, orderedRowsOfCode, orJoin, rowsOfEachCode, unsupportedModifier } from './shared.js';

/** A string parameter's values on its index rows `x`: prefix (the default), `:exact` or `:contains`. */
export function stringParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  return rows(orJoin(values.map((v) => stringCondition(name, modifier, unescape(v), x, ctx))));
}

function stringCondition(name: string, modifier: string | undefined, value: string, x: string, ctx: CompileContext): string {
  const normalised = normaliseForIndex(value);
  switch (modifier) {
    case undefined:
      return `${x}.value LIKE ${ctx.args.add(`${likeEscape(normalised)}%`)}`;
    case 'exact':
      return `${x}.value = ${ctx.args.add(normalised)} AND ${x}.exact = ${ctx.args.add(value)}`;
    case 'contains':
      return `${x}.value LIKE ${ctx.args.add(`%${likeEscape(normalised)}%`)}`;
    // _filter's `ew` only (resolveParameter refuses the modifier on REST).
    case 'ends-with':
      return `${x}.value LIKE ${ctx.args.add(`%${likeEscape(normalised)}`)}`;
    default:
      throw unsupportedModifier(name, modifier, 'string');
  }
}

/**
 * A string parameter's default (prefix) match on one value, as the range of index values it
 * covers: `lower` <= value < `upper` in byte order (text_pattern_ops). Such a match can be read
 * from its index in order (src/search/pages/ordered-matches.ts).
 */
export interface PrefixRange {
  code: string;
  lower: string;
  upper: string;
}

/** The PrefixRange of string parameter `code` (no modifier) matching `value`, or undefined when the value is not one prefix. */
export function stringPrefixRange(code: string, value: string): PrefixRange | undefined {
  const values = splitOr(value);
  if (values.length !== 1) return undefined;
  const lower = normaliseForIndex(unescape(values[0]));
  const upper = lower === '' ? undefined : prefixUpperBound(lower);
  return upper === undefined ? undefined : { code, lower, upper };
}

/**
 * The resources of one project and type matching a PrefixRange, each once with its first
 * matching value (`first`, byte order), ordered by it, then id: the order of the string index
 * (`value text_pattern_ops`, then "resourceId"), so that with `window` (rows of the index read,
 * in that order) the match stops early and is still the beginning of the whole match (a
 * resource is among the first rows when its first matching row is). The bounds are arguments of
 * the statement, so its plan is the same for every prefix.
 */
export function stringPrefixMatches(range: PrefixRange, type: string, projectId: string, ctx: CompileContext, window?: number): string {
  const { args } = ctx;
  const bounds = ` AND w.value ~>=~ ${args.add(range.lower)} AND w.value ~<~ ${args.add(range.upper)}`;
  const select = (codeRows: string) => `SELECT w."resourceId", w.value FROM string_index w WHERE ${codeRows}${bounds}`;
  const rows =
    window === undefined
      ? rowsOfEachCode(args.add(projectId), type, range.code, ctx, select)
      : orderedRowsOfCode(args.add(projectId), type, range.code, ctx, select, 'w.value USING ~<~, w."resourceId"', 'u.value USING ~<~, u."resourceId"', args.add(window));
  // min under "C" is text_pattern_ops' byte order. Ordered here, before the page's join to the
  // resources, so that the join keeps this order and stops at the page.
  return firstOfEach(rows, 'min(m.value COLLATE "C")', true);
}

/**
 * The resources of one project (`project`: its id as an SQL expression) and type with rows of the
 * string parameter `code`, each once with its sort value (`first`: its least value, or for a descending sort its greatest, in byte order
 * as the general page's sort compares them, src/search/pages/general.ts), read from the string
 * index in that order (`value text_pattern_ops`, then "resourceId") with a `window` of rows.
 * Ascending, that is the page's order (value, then id). Descending, the index gives ids
 * descending within a value while the page breaks ties by id ascending, so the resources of the
 * window's last value, which may have more rows beyond it, are left out (unless the window holds
 * fewer rows than it could: then it holds every row there is): the rest are the beginning of the
 * whole order.
 */
export function stringSortMatches(code: string, descending: boolean, type: string, project: string, ctx: CompileContext, window: number): string {
  const order = descending ? 'w.value USING ~>~, w."resourceId" DESC' : 'w.value USING ~<~, w."resourceId"';
  const merged = descending ? 'u.v USING ~>~, u."resourceId" DESC' : 'u.v USING ~<~, u."resourceId"';
  const limit = ctx.args.add(window);
  const select = (codeRows: string) => `SELECT w."resourceId", w.value COLLATE "C" AS v FROM string_index w WHERE ${codeRows}`;
  const rows = orderedRowsOfCode(project, type, code, ctx, select, order, merged, limit);
  if (!descending) return firstOfEach(rows, 'min(m.v)', false);
  return (
    `SELECT q."resourceId", q.first FROM (SELECT m."resourceId", max(m.v) AS first, min(min(m.v)) OVER () AS last,` +
    ` sum(count(*)) OVER () AS held FROM (${rows}) m GROUP BY m."resourceId") q WHERE q.first > q.last OR q.held < ${limit}`
  );
}

/**
 * The least string above every string starting with `prefix`, in code point order (which is
 * UTF-8 byte order, text_pattern_ops' order): the prefix with its last code point incremented.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) return String.fromCodePoint(...points, last === 0xd7ff ? 0xe000 : last + 1);
  }
  return undefined;
}
