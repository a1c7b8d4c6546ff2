import type { SqlArgs } from '../../db/sql-args.js';
import type { Filter } from '../plan/filters.js';
import { indexTableOf } from '../query/conditions.js';
import { codesArg } from '../query/conditions/shared.js';
import { storesOneRowAtMost } from '../../indexing/single-row.js';
import { freshContext, type DrivenSearch } from './driven.js';
import type { PageRows } from './rows.js';

/** A `:missing=true` filter on an indexed parameter, with the table and codes of its rows. */
export interface MissingFilter {
  table: string;
  codes: readonly string[];
  oneRow: boolean;
}

/** The first `:missing=true` filter of an indexed parameter (token, string, reference, date, ...) among `filters`. */
export function missingTrueFilter(filters: readonly Filter[], type: string): MissingFilter | undefined {
  for (const { value, resolved } of filters) {
    if (resolved.kind !== 'indexed' || resolved.modifier !== 'missing' || value !== 'true') continue;
    const table = indexTableOf(resolved.param.type);
    if (!table) continue;
    const oneRow = resolved.codes.length === 1 && storesOneRowAtMost(type, resolved.codes[0]);
    return { table, codes: resolved.codes, oneRow };
  }
  return undefined;
}

/**
 * The page of a search of one project with a `:missing=true` filter when every resource of the
 * type has a row of that parameter: empty, without probing each resource for its rows. Told by two
 * counts, whatever the statistics: the resources of the type in the project that are not deleted
 * and the resources with a row of the parameter (resourcesWithRows, each one not deleted). When
 * they are equal, none misses it. Undefined otherwise: the resources are probed.
 * The probes cost one primary-key read per resource of the type; the counts read each index
 * once in order.
 */
export async function noneMissingPage(search: DrivenSearch, missing: MissingFilter): Promise<PageRows | undefined> {
  const ctx = freshContext(search);
  const project = ctx.args.add(search.projectId);
  const type = ctx.args.add(search.type);
  const having = resourcesWithRows(missing, `w."projectId" = ${project} AND w."resourceType" = ${type}`, ctx.args);
  const resources = `SELECT count(*) FROM resource r WHERE r."projectId" = ${project} AND r."resourceType" = ${type} AND NOT r.deleted`;
  const sql = `SELECT (${having}) >= (${resources}) AS none`;
  const [{ none }] = await search.services.db.query<{ none: boolean }>(sql, ctx.args.values);
  return none ? { rows: [], more: false } : undefined;
}

/**
 * The count of the resources with a row of the missing filter's parameter among the rows `w` that
 * meet `where` (a project and type): its rows as they are when it stores one row per resource at
 * most, else its distinct resources. A deletion drops a resource's index rows, so each is a
 * resource that is not deleted.
 */
export function resourcesWithRows(missing: MissingFilter, where: string, args: SqlArgs): string {
  const rows = `FROM ${missing.table} w WHERE ${where} AND w.code = ${codesArg(missing.codes, args)}`;
  return missing.oneRow ? `SELECT count(*) ${rows}` : `SELECT count(DISTINCT w."resourceId") ${rows}`;
}
