import type { SqlExecutor } from '../db/database.js';
import { SqlArgs } from '../db/sql-args.js';
import type { Identity } from '../identity/identity.js';
import { COLUMNS, queryRows } from '../search/pages/rows.js';
import { criteriaConditions } from '../search/plan/base-conditions.js';
import type { CompileContext } from '../search/query/conditions/types.js';
import type { SearchRow } from '../search/service.js';
import {
  clinicalDateConditions,
  compartmentTypes,
  partTypes,
  sinceCondition,
  typeListCondition,
  type RecordFilters,
} from './record-conditions.js';

/**
 * The statements that read a patient's record page by page. The compartment is read from the
 * `_compartment` reference rows by the partial index of migration 0021 (one range scan after
 * the cursor, every type at once); the referenced resources (record-referenced.ts) are the
 * distinct targets of the compartment's reference rows, read in (type, id) order. Both are keyset
 * pages.
 */

/** What every statement of one request shares. */
export interface RecordSource {
  readonly db: SqlExecutor;
  readonly identity: Identity;
  readonly projectId: string;
  readonly filters: RecordFilters;
  /** Binaries the caller may not see (a Bot's code: src/storage/bot-code.ts), which a record may reference. */
  readonly hiddenBinaries?: ReadonlySet<string>;
  /** Builds the compile context of one statement (its own arguments). */
  compileContext(args: SqlArgs): CompileContext;
}

export interface After {
  resourceType: string;
  id: string;
}

/** `c`: a `_compartment` row of the patient (the partial index's condition, as literals). */
export function compartmentRows(source: RecordSource, patientId: string, args: SqlArgs): string {
  return `c."projectId" = ${args.add(source.projectId)} AND c.code = '_compartment' AND c."targetType" = 'Patient' AND c."targetId" = ${args.add(patientId)}`;
}

/** The conditions on a compartment resource `r` (joined to `c`, whose type column is `typeColumn`): types, dates, policy. */
export function compartmentConditions(source: RecordSource, ctx: CompileContext, withTypeFilters: boolean, typeColumn = 'c."resourceType"'): string[] {
  const filters: RecordFilters = withTypeFilters ? source.filters : { start: source.filters.start, end: source.filters.end };
  const types = partTypes(source.identity, 'match', filters);
  const conditions = ['NOT r.deleted'];
  if (types) conditions.push(typeListCondition(typeColumn, types, ctx));
  // The rows of a Binary guarded by the patient (securityContext) say who may read it: it is no part of the record.
  else conditions.push(`${typeColumn} <> 'Binary'`);
  conditions.push(...clinicalDateConditions(filters, types, ctx));
  if (withTypeFilters) conditions.push(...sinceCondition(filters, ctx));
  conditions.push(...criteriaConditions(source.identity, types ?? [...compartmentTypes()], ctx, 'probe'));
  return conditions;
}

/**
 * The patient itself, which its record lists first, when the filters and the caller's access keep
 * it (a Patient is in its own compartment): read by primary key.
 */
export async function readPatientItself(source: RecordSource, patientId: string): Promise<SearchRow[]> {
  if (partTypes(source.identity, 'match', source.filters)?.length === 0) return [];
  const args = new SqlArgs();
  const ctx = source.compileContext(args);
  const conditions = [`r."resourceType" = 'Patient'`, `r.id = ${args.add(patientId)}`, `r."projectId" = ${args.add(source.projectId)}`];
  conditions.push(...compartmentConditions(source, ctx, true, 'r."resourceType"'));
  return queryRows(source.db, `SELECT ${COLUMNS} FROM resource r WHERE ${conditions.join(' AND ')}`, args.values);
}

/** Up to `limit` resources of the patient's compartment after `after`, in (type, id) order, but the patient itself. */
export async function readMatches(source: RecordSource, patientId: string, after: After | undefined, limit: number): Promise<SearchRow[]> {
  if (partTypes(source.identity, 'match', source.filters)?.length === 0) return [];
  const args = new SqlArgs();
  const ctx = source.compileContext(args);
  const itself = `NOT (c."resourceType" = 'Patient' AND c."resourceId" = ${args.add(patientId)})`;
  const conditions = [compartmentRows(source, patientId, args), itself];
  if (after) conditions.push(`(c."resourceType", c."resourceId") > (${args.add(after.resourceType)}, ${args.add(after.id)})`);
  conditions.push(...compartmentConditions(source, ctx, true));
  const sql = `SELECT ${COLUMNS} FROM reference_index c
    JOIN resource r ON r."resourceType" = c."resourceType" AND r.id = c."resourceId"
    WHERE ${conditions.join(' AND ')}
    ORDER BY c."resourceType", c."resourceId" LIMIT ${args.add(limit)}`;
  return queryRows(source.db, sql, args.values);
}

/** The first patient after `afterId` (by id) the caller may see, for the type-level walk. */
export async function nextPatient(source: RecordSource, afterId: string | undefined): Promise<string | undefined> {
  const args = new SqlArgs();
  const ctx = source.compileContext(args);
  const conditions = [`r."resourceType" = 'Patient'`, `r."projectId" = ${args.add(source.projectId)}`, 'NOT r.deleted'];
  if (afterId !== undefined) conditions.push(`r.id > ${args.add(afterId)}`);
  conditions.push(...criteriaConditions(source.identity, ['Patient'], ctx, 'probe-non-keys'));
  const rows = await source.db.query<{ id: string }>(`SELECT r.id FROM resource r WHERE ${conditions.join(' AND ')} ORDER BY r.id LIMIT 1`, args.values);
  return rows[0]?.id;
}
