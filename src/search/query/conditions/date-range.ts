import type { CompileContext } from './types.js';
import { scopeSql } from '../../../storage/project-scope.js';
import { parseDateValue } from '../values.js';
import { dateBoundKind, dateCondition, dateRowRange } from './date.js';

/**
 * A redundant condition for `name=ge<A>&name=le<B>` (gt/lt alike) that an index can serve; the
 * caller keeps both parameters' own conditions. Neither bound alone is selective (each half the
 * data), and FHIR lets each bound match a different value of the resource, so the two EXISTS
 * cannot simply be merged into one. This condition is
 *   resource IN (those with a row of the parameter that meets both bounds and overlaps [A, B]
 *                UNION ALL those with a row of it with seq > 1)
 * and it is implied by the two conditions, hence adds nothing to and removes nothing from the
 * result: a resource with at most one row of the parameter meets both bounds with that one row
 * (so the first branch holds), and a resource with two or more rows has one with seq > 1 (seq
 * numbers the rows of one resource in one table from 1, src/storage/sql.ts). Rows meeting both
 * bounds overlap [A, B] (the lower bound asks end >= A, the upper start <= B), which the GiST
 * index on the row range finds; the partial index on seq > 1 finds the rest (empty when the
 * parameter has one value per resource, the usual case). When A > B a row meets both only by
 * containing [B, A]. `name` is a date parameter without modifier (the caller checks).
 */
export function dateRangeCondition(
  name: string,
  lower: string,
  upper: string,
  types: readonly string[],
  alias: string,
  ctx: CompileContext,
): string | undefined {
  const x = `x${ctx.depth}`;
  const range = dateRowMeetsRange(name, lower, upper, x, ctx);
  if (!range) return undefined;
  const meets = `${range.both} AND ${range.overlap}`;
  return `(${alias}."projectId", ${alias}."resourceType", ${alias}.id) IN (${dateRowsOf(x, types, ctx, meets, name)}` +
    ` UNION ALL ${dateRowsOf(x, types, ctx, `${x}.seq > 1`, name)})`;
}

/**
 * The conditions on a date_index row `x` of `name` that it meets both bounds, and that it overlaps
 * [A, B] (the GiST index's), or undefined when `lower`/`upper` are not such a pair. A missing bound
 * leaves that side open: no date value of FHIR's years stands in for it, as a period open on that
 * side or starting (ending) within the edge day of the years meets no `le`/`ge` of that day.
 */
function dateRowMeetsRange(name: string, lower: string | undefined, upper: string | undefined, x: string, ctx: CompileContext): { both: string; overlap: string } | undefined {
  if ((lower === undefined && upper === undefined) || !isBound(lower, 'lower') || !isBound(upper, 'upper')) return undefined;
  const a = lower === undefined ? undefined : lowerEdge(name, lower);
  const b = upper === undefined ? undefined : upperEdge(name, upper);
  const [aTime, bTime] = [a === undefined ? -Infinity : Date.parse(a), b === undefined ? Infinity : Date.parse(b)];
  if (Number.isNaN(aTime) || Number.isNaN(bTime)) return undefined;
  const start = `${x}.start`;
  const end = `${x}."end"`;
  const both = [lower, upper].flatMap((raw) => (raw === undefined ? [] : [dateCondition(name, raw, start, end, ctx)])).join(' AND ');
  const bound = (at: string | undefined): string => (at === undefined ? 'NULL' : ctx.args.add(at, 'timestamptz'));
  const overlap =
    aTime <= bTime
      ? `${dateRowRange(x)} && tstzrange(${bound(a)}, ${bound(b)}, '[]')`
      : `${dateRowRange(x)} @> tstzrange(${bound(b)}, ${bound(a)}, '[]')`;
  return { both, overlap };
}

function isBound(raw: string | undefined, kind: 'lower' | 'upper'): boolean {
  return raw === undefined || dateBoundKind(raw) === kind;
}

/** The row's end must reach this, for a lower bound (looser than gt, as a hint may be). */
function lowerEdge(name: string, raw: string): string {
  const { prefix, range } = parseDateValue(name, raw);
  return prefix === 'ge' ? range.start : range.end;
}

/** The row's start must not pass this, for an upper bound (looser than lt, as a hint may be). */
function upperEdge(name: string, raw: string): string {
  const { prefix, range } = parseDateValue(name, raw);
  return prefix === 'le' ? range.end : range.start;
}

/**
 * The resources matching `name=<lower>&name=<upper>` (dateRangeCondition's pair) in one project,
 * each once, as rows of "resourceId" that a page can be joined from without de-duplicating them
 * (src/search/pages/date-range.ts): a resource without a row of `name` with seq > 1 has at most one
 * row of it, so its rows that meet both bounds (found by the GiST index, in its order) are
 * distinct; the resources with such a row (the partial index on seq > 1; none when the parameter
 * has one value per resource) are listed once each when some row meets each bound, as FHIR says.
 * A page joined from these rows stops at its last row, where `IN` had PostgreSQL hash every match
 * first (550 rows for a day of 1,000,000 Observations). A missing bound leaves that side open (a
 * lone `gt`, say). Undefined when the pair is not one; `name` is a date parameter without
 * modifier (the caller checks).
 */
export function dateRangeRows(name: string, lower: string | undefined, upper: string | undefined, type: string, projectId: string, ctx: CompileContext): string | undefined {
  const range = dateRowMeetsRange(name, lower, upper, 'g', ctx);
  if (!range) return undefined;
  const inProject = (x: string): string =>
    `${x}."projectId" = ${ctx.args.add(projectId)} AND ${x}."resourceType" = ${ctx.args.add(type)} AND ${x}.code = ${ctx.args.add(name)}`;
  const sameResource = (x: string, of: string): string =>
    `${x}."projectId" = ${of}."projectId" AND ${x}."resourceType" = ${of}."resourceType" AND ${x}.code = ${of}.code AND ${x}."resourceId" = ${of}."resourceId"`;
  const someRow = (raw: string | undefined): string =>
    raw === undefined
      ? 'true'
      : `EXISTS (SELECT 1 FROM date_index x WHERE ${sameResource('x', 'l')} AND ${dateCondition(name, raw, 'x.start', 'x."end"', ctx)})`;
  // Only the overlap is left for an index to serve: with statistics older than the data, the
  // planner also read the project's every row ending after A from a btree index, to AND the two.
  const single =
    `SELECT g."resourceId" FROM date_index g WHERE ${range.overlap} AND (${inProject('g')} AND ${range.both}) IS TRUE` +
    ` AND NOT EXISTS (SELECT 1 FROM date_index l WHERE ${sameResource('l', 'g')} AND l.seq > 1)`;
  const several =
    `SELECT l."resourceId" FROM date_index l WHERE ${inProject('l')} AND l.seq > 1 AND ${someRow(lower)} AND ${someRow(upper)}` +
    ` GROUP BY l."resourceId"`;
  return `${single} UNION ALL ${several}`;
}

/**
 * The resources having a row of date parameter `code` that meets `condition`, uncorrelated so the
 * planner can drive the search from it: each branch is an index-only scan (the GiST index on the
 * row range includes the columns read, migration 0012; the partial index on seq > 1 likewise).
 */
function dateRowsOf(x: string, types: readonly string[], ctx: CompileContext, condition: string, code: string): string {
  const where = [
    scopeSql(x, 'projectId', ctx.scope, ctx.args),
    // Several types (a system search): the join on the resource's type filters them.
    types.length === 1 ? `${x}."resourceType" = ${ctx.args.add(types[0])}` : undefined,
    `${x}.code = ${ctx.args.add(code)}`,
    condition,
  ];
  return `SELECT ${x}."projectId", ${x}."resourceType", ${x}."resourceId" FROM date_index ${x} WHERE ${where.filter(Boolean).join(' AND ')}`;
}
