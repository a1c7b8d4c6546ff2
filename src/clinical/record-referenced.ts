import { SqlArgs } from '../db/sql-args.js';
import { COLUMNS, queryRows } from '../search/pages/rows.js';
import { criteriaConditions } from '../search/plan/base-conditions.js';
import type { CompileContext } from '../search/query/conditions/types.js';
import type { SearchRow } from '../search/service.js';
import type { ReferencedPlan } from './everything-cursor.js';
import { partTypes, sinceCondition, typeListCondition } from './record-conditions.js';
import { compartmentConditions, compartmentRows, type After, type RecordSource } from './record-pages.js';

/**
 * The referenced part of a patient's record: up to `limit` resources after `after`, in (type, id)
 * order, that a resource of the patient's compartment references (by any reference search
 * parameter) and whose type is in no patient compartment. The referencing resource must itself be
 * in the record as the caller sees it (dates and policy; `_type` and `_since` narrow what is
 * returned, not what is followed).
 *
 * Two statements give the same rows; which one reads the part is chosen from counts of index rows,
 * not from statistics (followedRowsIfFew), for its first page; its later pages are read from the
 * same side (`chosen`, carried by the walk's cursor):
 *  - the record's: every compartment resource and its reference rows, the distinct targets then
 *    read by primary key. Its cost is the record's size on every page (1.2-2 s for 19,775
 *    Observations never analyzed, even when the project holds no resource of a followed type);
 *  - the followed side's: the project's reference rows to followed types after the cursor, their
 *    distinct targets in order, each kept when one of its referencing resources is in the record
 *    (a probe of the compartment's partial index by that resource's key), until the page is full.
 */
export async function readReferenced(
  source: RecordSource,
  patientId: string,
  after: After | undefined,
  limit: number,
  chosen?: ReferencedPlan,
): Promise<ReferencedPage> {
  const types = partTypes(source.identity, 'include', source.filters) ?? [];
  if (types.length === 0) return { rows: [] };
  const plan = chosen ?? (await chosenPlan(source, patientId, types, after));
  if (plan === undefined) return { rows: [] };
  const read = plan === 'record' ? readFromRecord : readFromFollowed;
  return { rows: await read(source, patientId, types, after, limit), plan };
}

/**
 * A page of the referenced part, and the side it was read from, which the walk's cursor carries
 * (`chosen` of its later pages): a followed side that suited one page suits the next, whose
 * followed rows after the cursor are fewer against the same record.
 */
export interface ReferencedPage {
  rows: SearchRow[];
  plan?: ReferencedPlan;
}

/** The side the part is read from, by counts of index rows (followedRowsIfFew); undefined when nothing is followed. */
async function chosenPlan(source: RecordSource, patientId: string, types: readonly string[], after: After | undefined): Promise<ReferencedPlan | undefined> {
  const followed = await followedRowsIfFew(source, patientId, types, after);
  if (followed === 0) return undefined;
  return followed === undefined ? 'record' : 'followed';
}

/**
 * The windows in which the record's compartment rows are counted (each up to the window and one
 * more), and the followed reference rows up to what the record allows: the first window
 * answers unless both sides hold more than 800 rows, so a record that references nothing in a
 * project that holds nothing to follow costs about nothing to decide, and a small record in a
 * project with a million references to Practitioners costs its own rows.
 */
const COUNT_WINDOWS = [800, 6_400, 51_200];

/**
 * Followed reference rows a page may be read from per compartment row of the record. A followed
 * row costs a sorted index row and, at worst (its target is not the record's), a probe of the
 * compartment's partial index by the referencing resource's key; a compartment row costs the
 * resource's probe and its reference rows (about 10 buffers, bench/RESULTS.md): up to two
 * followed rows per record row, the followed side's worst case costs about the record's.
 */
const FOLLOWED_ROWS_PER_RECORD_ROW = 2;

/**
 * Reference rows to followed types that the followed side reads, but does not follow, per
 * compartment row of the record: `_compartment` rows to accounts (an Organization). The type's
 * range of (projectId, targetType, targetId) holds them (it has no code), so the walk reads each
 * and its table page to leave it out; written with their resources, they mostly share those
 * pages (bench/RESULTS.md): far less than a followed row costs, so a project that gives every
 * resource an account does not send every record to the record's side.
 */
const READ_ROWS_PER_RECORD_ROW = 8;

/**
 * The project's reference rows to followed types after the cursor when there are at most
 * FOLLOWED_ROWS_PER_RECORD_ROW times as many as the record has compartment rows, and the rows
 * the walk reads for them (those not followed too) at most READ_ROWS_PER_RECORD_ROW times as
 * many; else undefined. Counted on index rows alone ((projectId, targetType, targetId) one type
 * at a time, and the compartment's partial index), so no statistics are needed. The rows are
 * numbered as read: the count stops at whichever bound comes first (the row past the read bound
 * is kept by the filter, so that it is seen).
 */
async function followedRowsIfFew(source: RecordSource, patientId: string, types: readonly string[], after: After | undefined): Promise<number | undefined> {
  for (const window of COUNT_WINDOWS) {
    const args = new SqlArgs();
    const record = `SELECT count(*) AS n FROM (SELECT 1 FROM reference_index c WHERE ${compartmentRows(source, patientId, args)} LIMIT ${args.add(window + 1)}) x`;
    const most = `(SELECT n * ${FOLLOWED_ROWS_PER_RECORD_ROW} + 1 FROM record)`;
    const read = `(SELECT n * ${READ_ROWS_PER_RECORD_ROW} FROM record)`;
    const rows = followedRows(source, types, after, args, ['ref."targetId" IS NOT NULL'], `${read} + 1`);
    const numbered = `SELECT ref.code <> '_compartment' AS followed, row_number() OVER () AS k ${rows} LIMIT ${read} + 1`;
    const kept = `SELECT followed, k FROM (${numbered}) a WHERE followed OR k > ${read} LIMIT ${most}`;
    const tally = `SELECT count(*) FILTER (WHERE followed)::int AS followed, coalesce(bool_or(k > ${read}), false) AS cut FROM (${kept}) b`;
    const sql = `WITH record AS (${record}) SELECT n::int AS "record", f.followed, f.cut FROM record CROSS JOIN LATERAL (${tally}) f`;
    const [counted] = await source.db.query<{ record: number; followed: number; cut: boolean }>(sql, args.values);
    if (!counted.cut && counted.followed <= counted.record * FOLLOWED_ROWS_PER_RECORD_ROW) return counted.followed;
    if (counted.record <= window) return undefined;
  }
  return undefined;
}

/**
 * FROM the project's reference rows `ref` to followed types after the cursor, that meet `more`:
 * one index range per type, the type a LATERAL's parameter (an IN list of a hundred types is half
 * the table to a planner without statistics, which then reads it all). The cursor is a bound on
 * the id in its own type's range and leaves out the types before it: as a row comparison
 * `(targetType, targetId) > (..)` in every type's range, the scan of each later type started at
 * the cursor and read on through the rest of the cursor's type (5 s a page for 20,000 rows).
 * `most`: rows counted, read in index order so that the scan stops there (a bitmap scan, which
 * the planner chose without it, reads a million rows to Practitioners before it returns one).
 */
function followedRows(source: RecordSource, types: readonly string[], after: After | undefined, args: SqlArgs, more: readonly string[], most?: string): string {
  const conditions = [`ref."projectId" = ${args.add(source.projectId)}`, 'ref."targetType" = y.type', ...more];
  let fromCursor = '';
  if (after) {
    const type = args.add(after.resourceType);
    conditions.push(`ref."targetId" > CASE WHEN y.type = ${type} THEN ${args.add(after.id)} ELSE '' END`);
    fromCursor = ` WHERE u.type >= ${type}`;
  }
  const bound = most === undefined ? 'OFFSET 0' : `ORDER BY ref."targetId" LIMIT ${most}`;
  const each = `SELECT ref."targetType", ref."targetId", ref.code FROM reference_index ref WHERE ${conditions.join(' AND ')} ${bound}`;
  return `FROM (SELECT u.type FROM unnest(${args.add([...types].sort(), 'text[]')}) u(type)${fromCursor}) y CROSS JOIN LATERAL (${each}) ref`;
}

/** The conditions on a referenced resource `r`: of the project, live, `_since`, hidden Binaries, the caller's criteria. */
function targetConditions(source: RecordSource, types: readonly string[], ctx: CompileContext): string[] {
  const { args } = ctx;
  const conditions = [`r."projectId" = ${args.add(source.projectId)}`, 'NOT r.deleted'];
  if (source.hiddenBinaries?.size && types.includes('Binary')) {
    conditions.push(`NOT (r."resourceType" = 'Binary' AND r.id = ANY(ARRAY(SELECT json_array_elements_text(${args.add(JSON.stringify([...source.hiddenBinaries]))}::json))))`);
  }
  conditions.push(...sinceCondition(source.filters, ctx), ...criteriaConditions(source.identity, types, ctx, 'probe'));
  return conditions;
}

/** The page read from the record: its targets once per page, whatever the statistics. */
function readFromRecord(source: RecordSource, patientId: string, types: readonly string[], after: After | undefined, limit: number): Promise<SearchRow[]> {
  const args = new SqlArgs();
  const ctx = source.compileContext(args);
  const followedConditions = [compartmentRows(source, patientId, args), ...compartmentConditions(source, ctx, false)];
  followedConditions.push(`ref.code <> '_compartment'`, 'ref."targetId" IS NOT NULL', typeListCondition('ref."targetType"', types, ctx));
  if (after) followedConditions.push(`(ref."targetType", ref."targetId") > (${args.add(after.resourceType)}, ${args.add(after.id)})`);
  // MATERIALIZED: planned as a semi-join, a project whose statistics show few resources of the
  // followed types got the record's whole join run again for each such resource (minutes once
  // some were written). The inner `r` (the referencing resource) hides the outer one.
  const followed = `SELECT DISTINCT ref."targetType", ref."targetId" FROM reference_index c
      JOIN resource r ON r."resourceType" = c."resourceType" AND r.id = c."resourceId"
      JOIN reference_index ref ON ref."resourceType" = c."resourceType" AND ref."resourceId" = c."resourceId"
      WHERE ${followedConditions.join(' AND ')}`;
  const conditions = targetConditions(source, types, ctx);
  const sql = `WITH followed AS MATERIALIZED (${followed})
    SELECT ${COLUMNS} FROM followed f JOIN resource r ON r."resourceType" = f."targetType" AND r.id = f."targetId"
    WHERE ${conditions.join(' AND ')} ORDER BY r."resourceType", r.id LIMIT ${args.add(limit)}`;
  return queryRows(source.db, sql, args.values);
}

/**
 * The page read from the followed side: the distinct targets after the cursor in order (a sort of
 * at most as many rows as the record has), then for each in turn, as subplans that the LIMIT
 * stops: whether a reference row to it comes from a resource of the record (the first one found
 * answers), and the target itself by primary key. Each step is a scalar subquery or a LATERAL
 * with a LIMIT, so no plan can turn it into a join that reads the whole record.
 */
function readFromFollowed(source: RecordSource, patientId: string, types: readonly string[], after: After | undefined, limit: number): Promise<SearchRow[]> {
  const args = new SqlArgs();
  const ctx = source.compileContext(args);
  const rows = followedRows(source, types, after, args, ['ref."targetId" IS NOT NULL', `ref.code <> '_compartment'`]);
  const targets = `SELECT DISTINCT ref."targetType", ref."targetId" ${rows} ORDER BY 1, 2`;
  // The referencing resource's compartment row `c` first (an index probe that fails for a resource
  // of another record), then the resource `r` itself, which hides the target `r` in here.
  const kept = `SELECT true FROM resource r WHERE r."resourceType" = c."resourceType" AND r.id = c."resourceId"
        AND ${compartmentConditions(source, ctx, false).join(' AND ')} LIMIT 1`;
  const inRecord = `SELECT true FROM reference_index c
      WHERE ${compartmentRows(source, patientId, args)} AND c."resourceType" = ref."resourceType" AND c."resourceId" = ref."resourceId"
        AND (${kept}) IS TRUE LIMIT 1`;
  const referenced = `SELECT true FROM reference_index ref
      WHERE ref."projectId" = ${args.add(source.projectId)} AND ref."targetType" = d."targetType" AND ref."targetId" = d."targetId"
        AND ref.code <> '_compartment' AND (${inRecord}) IS TRUE LIMIT 1`;
  const target = `SELECT * FROM resource r WHERE r."resourceType" = d."targetType" AND r.id = d."targetId"
      AND ${targetConditions(source, types, ctx).join(' AND ')} LIMIT 1`;
  const sql = `SELECT ${COLUMNS} FROM (${targets}) d CROSS JOIN LATERAL (${target}) r
    WHERE (${referenced}) IS TRUE ORDER BY d."targetType", d."targetId" LIMIT ${args.add(limit)}`;
  return queryRows(source.db, sql, args.values);
}
