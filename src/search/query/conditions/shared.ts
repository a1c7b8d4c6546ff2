import { isResourceType } from '../../../fhir/definitions.js';
import { errors, issue, OperationOutcomeError, outcome } from '../../../fhir/outcome.js';
import type { SqlArgs } from '../../../db/sql-args.js';
import { storedCodes } from '../../../indexing/plan.js';
import type { CompileContext, IndexRowsCondition } from './types.js';

/** Modifiers FHIR R4 defines (or a resource type, for references): others are reported as unknown. */
const KNOWN_MODIFIERS = new Set(['missing', 'exact', 'contains', 'text', 'not', 'above', 'below', 'in', 'not-in', 'of-type', 'identifier']);

/** 400 `not-supported`: a known FHIR feature this server does not offer. */
export function notSupported(text: string, expression: string): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue('not-supported', text, expression)]), 400);
}

export function unsupportedModifier(name: string, modifier: string, kind: string): OperationOutcomeError {
  const code = name.split(':')[0];
  const text = KNOWN_MODIFIERS.has(modifier) || isResourceType(modifier)
    ? `Modifier :${modifier} is not supported on ${kind} parameter ${code}`
    : `Unknown modifier :${modifier} on ${kind} parameter ${code}`;
  return errors.invalid(text, name);
}

export function noModifier(name: string, modifier: string | undefined, kind: string): void {
  if (modifier !== undefined) throw unsupportedModifier(name, modifier, kind);
}

/** The alternatives of a comma-separated value as one condition. */
export function orJoin(conditions: string[]): string {
  return conditions.length === 1 ? conditions[0] : `(${conditions.join(') OR (')})`;
}

/**
 * `:missing=true|false` as a test of the parameter's rows: `false`, whether some row exists
 * (`rows`, which a count or a page may read as its driver); `true`, that none of the resource's
 * own rows has the code (`own`, ownRowsExist). As `NOT EXISTS` over the value index, PostgreSQL
 * without statistics made it an anti-join that read every row of the code once per resource (a
 * nested loop over a materialized 100,000 rows for each Patient): probed per resource, its cost is
 * the resources read, one primary-key probe each, whatever the statistics.
 */
export function missingCondition(name: string, value: string, rows: () => string, own: () => string): string {
  if (value !== 'true' && value !== 'false') throw errors.invalid(`${name} must be true or false, not "${value}"`, name);
  return value === 'true' ? `NOT ${own()}` : rows();
}

/**
 * EXISTS over the rows `x` of `table` with the code in `codeArg` (and `condition`) that belong to
 * the resource `alias`, read through the table's primary key (resourceType, resourceId, seq): the
 * resource's own rows, whatever its number of rows of other codes. The other conditions are one
 * `IS TRUE` expression and the rows ordered by seq, OFFSET 0 keeping the probe a subplan, so
 * that no plan seeks the value index (which orders the code's rows by value before resource) or
 * joins every row of the code instead.
 */
export function ownRowsExist(table: string, codeArg: string, alias: string, x: string, condition?: string): string {
  const test = condition ? ` AND (${condition})` : '';
  return (
    `EXISTS (SELECT 1 FROM ${table} ${x} WHERE ${x}."resourceType" = ${alias}."resourceType" AND ${x}."resourceId" = ${alias}.id` +
    ` AND (${x}."projectId" = ${alias}."projectId" AND ${x}.code = ${codeArg}${test}) IS TRUE ORDER BY ${x}.seq OFFSET 0)`
  );
}

/**
 * EXISTS over the rows `x` of `table` with the code in `codeArg` that belong to the resource
 * `alias`; `perRow` (CompileContext.perRow): probed once per row of `alias`, through the table's
 * primary key (resourceType, resourceId, seq), reading the few rows of that one resource. Through
 * the value index, a probe whose condition does not fix every column before resourceId (a token
 * without a system, a string prefix, a range, a uri, whose index holds resourceId after the value
 * only) reads every row of the value up to the resource: each page's `gender=female` probes read
 * half the Patients of the project. The other conditions are tested as one `IS TRUE`
 * expression so that no plan can seek the value index instead, and the rows are ordered by seq,
 * the primary key's order: on empty tables (a new server's first plans, kept per connection) a
 * full scan of the value index cost the same as the probe, and was taken. Reference rows keep their index:
 * a reference names its target, which the index seeks exactly, and one resource can hold
 * thousands of them (Group.member, List.entry), which the primary key would read all of. So do
 * `point` conditions (RowsOf), which fix every column of the value index before resourceId: the
 * seek finds the one row or nothing, and a resource without a match costs no table page, where
 * the primary key's rows of it are on one (read for their visibility on tables never vacuumed:
 * `_has:Observation:subject:code=system|code` probed ten Observations per Patient, a table page each).
 */
export function rowsExist(table: string, codeArg: string, alias: string, x: string, condition: string | undefined, perRow?: boolean, point?: boolean): string {
  if (perRow && table !== 'reference_index' && !point) return ownRowsExist(table, codeArg, alias, x, condition);
  const test = condition ? ` AND (${condition})` : '';
  return (
    `EXISTS (SELECT 1 FROM ${table} ${x} WHERE ${x}."projectId" = ${alias}."projectId" AND ${x}."resourceType" = ${alias}."resourceType"` +
    ` AND ${x}."resourceId" = ${alias}.id AND ${x}.code = ${codeArg}${test}${perRow ? ' OFFSET 0' : ''})`
  );
}

/**
 * What a row's code is compared with (`x.code = ${codesArg}`): one code as an argument; the
 * several codes of a union parameter (indexing/union-rows.ts) as ANY of an array, one match
 * whichever of them holds the value.
 */
export function codesArg(codes: readonly string[], args: SqlArgs): string {
  return codes.length === 1 ? args.add(codes[0]) : `ANY(${args.add([...codes], 'text[]')})`;
}

/**
 * The rows of `table` a parameter reads: the table itself for one code; for a union parameter's
 * codes, each code's rows as a branch of a UNION ALL. With `code = ANY(...)` over the table, a
 * planner without statistics seeks the value index by project, type and value alone, skipping
 * the code column (all Patient string rows for `name:exact`); each branch's code is exact, so
 * each seeks its own rows.
 */
export function rowsOfCodes(table: string, codes: readonly string[], ctx: CompileContext): string {
  if (codes.length === 1) return table;
  return `(${codes.map((code) => `SELECT * FROM ${table} WHERE code = ${ctx.args.add(code)}`).join(' UNION ALL ')})`;
}

/** EXISTS over the rows of `table` with `code` that belong to the resource `alias`. */
export function existsRows(table: string, code: string, alias: string, ctx: CompileContext, condition: string | undefined): string {
  return rowsExist(table, ctx.args.add(code), alias, `x${ctx.depth}`, condition, ctx.perRow);
}

/**
 * The rows `w` of an index table that belong to one project, type and parameter code (the leading
 * columns of its indexes); of every code a union parameter reads (storedCodes).
 */
export function rowsOfCode(projectId: string, type: string, code: string, ctx: CompileContext): string {
  return rowsOfCodeIn(ctx.args.add(projectId), type, code, ctx);
}

/** rowsOfCode with the project as an SQL expression (an argument, or a column of an outer row). */
export function rowsOfCodeIn(project: string, type: string, code: string, ctx: CompileContext): string {
  return `w."projectId" = ${project} AND w."resourceType" = ${ctx.args.add(type)} AND w.code = ${codesArg(storedCodes(type, code), ctx.args)}`;
}

/**
 * `select` (a SELECT of rows `w`, given the condition that picks one project's, type's and code's
 * rows) over every row of the parameter in one project (`project`: its id as an argument): a union
 * parameter's codes each a branch of a UNION ALL, as rowsOfCodes reads them, so that each branch's
 * code is an exact index column and the select's own range (a prefix, a value) stays in the index
 * condition. Over `code = ANY(...)`, PostgreSQL without statistics tested the codes as a filter
 * and read every value of the type's rows to the range's end.
 */
export function rowsOfEachCode(project: string, type: string, code: string, ctx: CompileContext, select: (rows: string) => string): string {
  return selectOfEachCode(project, type, code, ctx, select).join(' UNION ALL ');
}

/** `select` of one project's, type's and stored code's rows `w`, for each code the parameter stores its rows under (storedCodes). */
function selectOfEachCode(project: string, type: string, code: string, ctx: CompileContext, select: (rows: string) => string): string[] {
  const typeArg = ctx.args.add(type);
  return storedCodes(type, code).map((stored) => select(`w."projectId" = ${project} AND w."resourceType" = ${typeArg} AND w.code = ${ctx.args.add(stored)}`));
}

/**
 * `select` (a SELECT of rows `w`, given the condition that picks one project's, type's and code's
 * rows) read in `order` up to `limit` rows (an argument), as an index on (project, type, code,
 * the ordered columns) reads them. A union parameter's codes each get such a window, merged in
 * the same order (`merged`: `order` on the select's output columns, alias `u`): each window is
 * still read from its index in order, and the first `limit` rows of all codes are among the first
 * `limit` of each.
 */
export function orderedRowsOfCode(project: string, type: string, code: string, ctx: CompileContext, select: (rows: string) => string, order: string, merged: string, limit: string): string {
  const windows = selectOfEachCode(project, type, code, ctx, (rows) => `${select(rows)} ORDER BY ${order} LIMIT ${limit}`);
  if (windows.length === 1) return windows[0];
  return `SELECT * FROM (${windows.map((window) => `(${window})`).join(' UNION ALL ')}) u ORDER BY ${merged} LIMIT ${limit}`;
}

/**
 * Each resource of `rows` (columns "resourceId" and the aggregated ones, as `m`) once, with
 * `aggregate` as `first`; `ordered`: by it, then id.
 */
export function firstOfEach(rows: string, aggregate: string, ordered: boolean): string {
  return `SELECT m."resourceId", ${aggregate} AS first FROM (${rows}) m GROUP BY m."resourceId"${ordered ? ' ORDER BY first, m."resourceId"' : ''}`;
}

/**
 * The rows of an index-rows condition as a table of (projectId, resourceType, id), within `scope` (a
 * condition on its alias); `withSeq`: and each row's seq (for firstMatchingRow).
 */
export function indexRowsSource(rows: IndexRowsCondition, scope: string, withSeq = false): string {
  const { table, indexTable, alias, indexed } = rows;
  const select = `SELECT ${alias}."projectId", ${alias}."resourceType", ${alias}."resourceId" AS id${withSeq ? `, ${alias}.seq` : ''} FROM ${table} ${alias}`;
  const own = `${scope} AND ${ownRow(rows)}`;
  // IS TRUE leaves only the hint for an index to serve (IndexedHint); one table's rows only.
  if (indexed && table === indexTable) return `${select} WHERE ${indexed(alias)} AND (${own}) IS TRUE`;
  return `${select} WHERE ${own}`;
}

/**
 * The resources whose rows meet every one of `all` (index-rows conditions on one index table and
 * alias, each read alone: no union of codes, no IndexedHint), as (projectId, resourceType, id),
 * each once, within `scope`: one read of all their rows grouped by resource, with no form in which
 * one condition's rows are probed per row of another (see exact-count.ts, commonCodes). Undefined
 * when the conditions do not allow it.
 */
export function indexRowsOfAll(all: readonly IndexRowsCondition[], scope: string): string | undefined {
  const [{ indexTable, alias }] = all;
  if (all.some((rows) => rows.table !== indexTable || rows.indexTable !== indexTable || rows.alias !== alias || rows.indexed)) return undefined;
  const own = all.map((rows) => `(${ownRow(rows)})`);
  const columns = `${alias}."projectId", ${alias}."resourceType", ${alias}."resourceId"`;
  return (
    `SELECT ${columns.replace(/"resourceId"$/, '"resourceId" AS id')} FROM ${indexTable} ${alias} WHERE ${scope} AND (${own.join(' OR ')})` +
    ` GROUP BY ${columns} HAVING ${own.map((row) => `bool_or(${row})`).join(' AND ')}`
  );
}

/**
 * Whether the row `m` (columns id and seq, of indexRowsSource with seq) is its resource's first row
 * that meets `rows`, in seq order: probed through the primary key, so that a union parameter's
 * resources, whose value can be found under several codes (`name` and `family`), are each read
 * once and still in the order of the rows, the read stopping at its first rows.
 */
export function firstMatchingRow(rows: IndexRowsCondition, typeArg: string, project: string): string {
  const { indexTable, alias: x } = rows;
  return (
    `NOT EXISTS (SELECT 1 FROM ${indexTable} ${x} WHERE ${x}."resourceType" = ${typeArg} AND ${x}."resourceId" = m.id AND ${x}.seq < m.seq` +
    ` AND (${x}."projectId" = ${project} AND ${ownRow(rows)}) IS TRUE OFFSET 0)`
  );
}

/** What a row of an index-rows condition meets besides its project and type: its code and condition, on its alias. */
function ownRow({ alias, codeArg, condition }: IndexRowsCondition): string {
  return `${alias}.code = ${codeArg}${condition ? ` AND (${condition})` : ''}`;
}
