import type { Filter } from '../plan/filters.js';
import type { CompileContext } from '../query/conditions/types.js';
import { selectsByKey } from '../query/conditions/keys.js';
import { splitOr, unescape } from '../query/values.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { candidateConditions, freshContext, type AnyProjectSearch, type DrivenSearch } from './driven.js';
import { eachValueRows, isValueList, ownRows, VALUE_LIST_ROWS } from './value-list.js';

/**
 * The conditions of a search in one project with a key filter (selectsByKey: a reference to given
 * resources, an identifier), written so that the key's index rows are the candidates, the other
 * filters are tested on those rows before any resource row is read, and the resources are then
 * read by primary key:
 * `r.id = ANY(ARRAY(SELECT d.id FROM (<the key's index rows>) d WHERE <the other filters on d>))`.
 * The array is computed once, before the resource rows are read, so the plan cannot start from the
 * resource table: a planner that believes the project holds one Patient (statistics older than
 * the data, as before any ANALYZE) would otherwise scan every Patient of the project and probe the
 * identifier for each (3,700 probes for one match on fresh data). For the same reason the
 * resource's own conditions (type, project, not deleted, AccessPolicy criteria, `_lastUpdated`)
 * are tested as one `IS TRUE` expression, which no index can serve: only the primary key is left
 * to read the candidates by. As EXISTS conditions on `r` (the general form), the other filters
 * could only be tested once the resource row is joined: `Observation?subject=Patient/1&code=8867-4`
 * read the 10 Observations of the patient to keep the one with that code (bench/RESULTS.md has the
 * statement's rates both ways). The rows `d` have the columns the filters correlate on
 * (projectId, resourceType, id). The key selects few rows, so the statement is planned once like
 * every key search. Its cost grows with the key's rows, one index probe each: for a patient with
 * 100,000 Observations it is the same whatever the code, where the EXISTS form was cheaper for a
 * code most of them have (it stops at the page) and far dearer for one none has. A chain ending in
 * an identifier drives by its reference rows (query/conditions/chain-has.ts); `_id` by its own
 * values (idDrivenConditions). Undefined when no filter drives (`:identifier`, a chain ending in
 * `_id`). The general page runs these conditions in place of the search's own.
 */
export function keyDrivenConditions(search: DrivenSearch, filters: readonly Filter[]): { args: SqlArgs; where: string } | undefined {
  const at = filters.findIndex(({ name, value, resolved }) => !name.startsWith('_') && selectsByKey(name, value, resolved));
  if (at < 0) return idDrivenConditions(search, filters);
  const ctx = freshContext(search);
  // A list of keys (`subject=Patient/1,Patient/2`): each key's rows read alone (eachValueRows).
  const several = splitOr(filters[at].value).length > 1;
  const source = several ? eachValueRows(search, filters[at], ctx) : ownRows(search, filters[at], ctx);
  return source === undefined ? undefined : drivenWhere(search, filters.filter((_, i) => i !== at), ctx, source);
}

/**
 * `_id=a,b,...` with other filters, as the key filters above: the listed ids are the candidates.
 * Tested on the resource, the list let a generic plan start from another filter's index rows
 * (`_id` with 300 ids and `status=final`: every Observation's status row, each probed against the
 * list) - the per-page searches of an export's `_typeFilter` and AccessPolicy criteria.
 */
function idDrivenConditions(search: DrivenSearch, filters: readonly Filter[]): { args: SqlArgs; where: string } | undefined {
  const at = filters.findIndex(({ resolved }) => resolved.kind === 'id' && resolved.modifier === undefined);
  if (at < 0) return undefined;
  const ctx = freshContext(search);
  const ids = splitOr(filters[at].value).map(unescape);
  const source =
    `SELECT ${ctx.args.add(search.projectId)}::text AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", v AS id ` +
    `FROM unnest(ARRAY[${ids.map((id) => ctx.args.add(id)).join(', ')}]::text[]) v`;
  return drivenWhere(search, filters.filter((_, i) => i !== at), ctx, source);
}

/**
 * The conditions of a page of one project driven by a value list among its filters (the first
 * isValueList one) with fewer than VALUE_LIST_ROWS index rows, as a key's: its rows are the
 * candidates, the other filters probed on them, the resources read by primary key and, sorted,
 * each sort value probed by its own rows (drivenWhere). The rows are counted first, up to the
 * bound, an exact count that needs no statistics. Never analyzed, `Patient?name=smith42,johnson42`
 * was planned for its values as a scan of the project's Patients probing the names on each.
 */
export async function valueListConditions(search: DrivenSearch, filters: readonly Filter[]): Promise<{ args: SqlArgs; where: string } | undefined> {
  const at = filters.findIndex(isValueList);
  if (at < 0) return undefined;
  const counted = freshContext(search);
  const rows = eachValueRows(search, filters[at], counted);
  if (rows === undefined) return undefined;
  const limit = counted.args.add(VALUE_LIST_ROWS);
  const sql = `SELECT count(*)::int AS n FROM (SELECT 1 FROM (${rows}) d LIMIT ${limit}) c`;
  const [{ n }] = await search.services.db.query<{ n: number }>(sql, counted.args.values, { planOnce: true });
  if (n >= VALUE_LIST_ROWS) return undefined;
  const ctx = freshContext(search);
  return drivenWhere(search, filters.filter((_, i) => i !== at), ctx, eachValueRows(search, filters[at], ctx)!);
}

/** The conditions reading the candidate rows of `source` first, then the resources by primary key. */
export function drivenWhere(search: AnyProjectSearch, others: readonly Filter[], ctx: CompileContext, source: string): { args: SqlArgs; where: string } {
  const { candidates, onResource } = candidateConditions(search, others, ctx);
  // `IS TRUE` keeps the tests per candidate row (a subplan each): as semi-joins, a generic plan
  // (values unknown) may hash or merge a common code's 50,000 index rows against the 10 candidates.
  const tested = candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : '';
  const where = [
    `r."resourceType" = ${ctx.args.add(search.type)}`,
    `r.id = ANY(ARRAY(SELECT d.id FROM (${source}) d${tested}))`,
    `(${onResource.join(' AND ')}) IS TRUE`,
  ];
  return { args: ctx.args, where: where.join(' AND ') };
}
