import type { CompileContext, IndexedHint, RowsOf } from './types.js';
import { parseDateValue, splitOr, takePrefix } from '../values.js';
import { codesArg, firstOfEach, noModifier, orJoin, rowsOfCodeIn } from './shared.js';
import { storedCodes } from '../../../indexing/plan.js';

/** A date parameter's values on its index rows `x` (no modifiers). */
export function dateParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  noModifier(name, modifier, 'date');
  return rows(orJoin(values.map((v) => dateCondition(name, v, `${x}.start`, `${x}."end"`, ctx))), values.length === 1 ? withinHint(name, values[0], ctx) : undefined);
}

/**
 * For an `eq` value (`date=2023-03-01`): the row's range within the value's, which is what `eq`
 * asks and what the GiST index on the row range (migration 0006) finds (IndexedHint).
 */
function withinHint(name: string, raw: string, ctx: CompileContext): IndexedHint | undefined {
  const { prefix, range } = parseDateValue(name, raw);
  if (prefix !== 'eq') return undefined;
  return (x) => `${dateRowRange(x)} <@ tstzrange(${ctx.args.add(range.start, 'timestamptz')}, ${ctx.args.add(range.end, 'timestamptz')}, '[]')`;
}

/**
 * Date comparisons between the search range [qs, qe] and the stored range [start, end] (null =
 * open), as search.html defines each prefix.
 */
export function dateCondition(name: string, raw: string, start: string, end: string, ctx: CompileContext): string {
  const { prefix, range } = parseDateValue(name, raw);
  // Arguments are added only when used: PostgreSQL cannot type a parameter the SQL never mentions.
  const qs = (): string => ctx.args.add(range.start, 'timestamptz');
  const qe = (): string => ctx.args.add(range.end, 'timestamptz');
  const within = (): string => `(${start} >= ${qs()} AND ${end} <= ${qe()})`;
  // `eq`, `ge` and `le` also get a bound they imply on one column (start <= qe, end >= qs), so an
  // index on that column can serve them.
  switch (prefix) {
    case 'eq':
      return `${start} <= ${qe()} AND ${within()}`;
    case 'ne':
      return `NOT (COALESCE(${start} >= ${qs()} AND ${end} <= ${qe()}, false))`;
    case 'gt':
      return `(${end} > ${qe()} OR ${end} IS NULL)`;
    case 'lt':
      return `(${start} < ${qs()} OR ${start} IS NULL)`;
    case 'ge':
      return `(${end} >= ${qs()} OR ${end} IS NULL) AND (${end} > ${qe()} OR ${end} IS NULL OR ${within()})`;
    case 'le':
      return `(${start} <= ${qe()} OR ${start} IS NULL) AND (${start} < ${qs()} OR ${start} IS NULL OR ${within()})`;
    case 'sa':
      return `${start} > ${qe()}`;
    case 'eb':
      return `${end} < ${qs()}`;
    case 'ap': {
      // Within 10% of the distance between the value and now, at least a day, either side.
      const now = Date.now();
      const from = Date.parse(range.start);
      const to = Date.parse(range.end);
      const margin = Math.max(86_400_000, 0.1 * Math.max(Math.abs(now - from), Math.abs(now - to)));
      const lo = ctx.args.add(new Date(Math.max(from - margin, -62135596800000)).toISOString(), 'timestamptz');
      const hi = ctx.args.add(new Date(Math.min(to + margin, 253402300799999)).toISOString(), 'timestamptz');
      return `(COALESCE(${start} <= ${hi}, true) AND COALESCE(${end} >= ${lo}, true))`;
    }
  }
}

/**
 * The SQL expression of a date_index row's range, null bounds open, a reversed range (end before
 * start, which bad data can hold) turned round so the expression never fails. Spelled exactly as
 * the GiST index `date_index_range_idx` of migration 0006, so the planner matches it.
 */
export function dateRowRange(x: string): string {
  return `(CASE WHEN ${x}.start > ${x}."end" THEN tstzrange(${x}."end", ${x}.start, '[]') ELSE tstzrange(${x}.start, ${x}."end", '[]') END)`;
}

/** Whether a date parameter value bounds the matches from below (ge, gt) or from above (le, lt). */
export function dateBoundKind(raw: string): 'lower' | 'upper' | undefined {
  if (splitOr(raw).length !== 1) return undefined;
  const { prefix } = takePrefix(raw);
  if (prefix === 'ge' || prefix === 'gt') return 'lower';
  if (prefix === 'le' || prefix === 'lt') return 'upper';
  return undefined;
}

/**
 * The resources of one project (`project`: its id as an SQL expression) and type with rows of the
 * date parameter `code`, each once with
 * its sort value (`first`: the least COALESCE(start, end), or for a descending sort the greatest
 * COALESCE(end, start), as the general page's sort has it, src/search/pages/general.ts), in the
 * order of the page: that value, then id. The rows are read in that order from the index of
 * migration 0015, so with `window` the read stops early and is still the beginning of the whole
 * order (a resource's first row there holds its value).
 */
export function dateSortMatches(code: string, descending: boolean, type: string, project: string, ctx: CompileContext, window: number): string {
  const value = descending ? 'COALESCE(w."end", w.start)' : 'COALESCE(w.start, w."end")';
  const direction = descending ? 'DESC' : 'ASC';
  const rows =
    `SELECT w."resourceId", ${value} AS v FROM date_index w WHERE ${rowsOfCodeIn(project, type, code, ctx)}` +
    ` AND ${value} IS NOT NULL ORDER BY ${value} ${direction}, w."resourceId" LIMIT ${ctx.args.add(window)}`;
  return firstOfEach(rows, `${descending ? 'max' : 'min'}(m.v)`, false);
}

/**
 * dateSortMatches' resources as a walk: the same rows in the same order, up to `window` of them,
 * as rows `d` of (projectId, resourceType, id, first), those that meet `test` (a condition on
 * `d`), each resource at its first row only (no other row of its code comes before it: a greater
 * value for a descending sort, a lesser one for an ascending, or the same value and a lower seq,
 * probed through the primary key after `test`, which the fence keeps first), so that a statement
 * over it can stop at its first matches. dateSortMatches groups its window's rows by resource, so
 * every filter was tested on every resource of the window before the first of them was known.
 */
export function dateSortWalk(code: string, descending: boolean, type: string, project: string, ctx: CompileContext, window: number, test: string | undefined): string {
  const value = (row: string) => (descending ? `COALESCE(${row}."end", ${row}.start)` : `COALESCE(${row}.start, ${row}."end")`);
  const direction = descending ? 'DESC' : 'ASC';
  const typeArg = ctx.args.add(type);
  const rows =
    `SELECT ${project}::text AS "projectId", ${typeArg}::text AS "resourceType", w."resourceId" AS id, ${value('w')} AS first, w.seq` +
    ` FROM date_index w WHERE ${rowsOfCodeIn(project, type, code, ctx)}` +
    ` AND ${value('w')} IS NOT NULL ORDER BY ${value('w')} ${direction}, w."resourceId" LIMIT ${ctx.args.add(window)}`;
  const tested = test ? `SELECT d.* FROM (${rows}) d WHERE (${test}) IS TRUE OFFSET 0` : rows;
  const before = `${value('o')} ${descending ? '>' : '<'} m.first OR (${value('o')} = m.first AND o.seq < m.seq)`;
  const earlier =
    `SELECT 1 FROM date_index o WHERE o."resourceType" = ${typeArg} AND o."resourceId" = m.id` +
    ` AND (o."projectId" = ${project} AND o.code = ${codesArg(storedCodes(type, code), ctx.args)} AND (${before})) IS TRUE OFFSET 0`;
  return `SELECT m."projectId", m."resourceType", m.id, m.first FROM (${tested}) m WHERE NOT EXISTS (${earlier})`;
}
