import { toInstant, type QueryOptions, type SqlExecutor } from '../db/database.js';
import { SqlArgs } from '../db/sql-args.js';
import type { Identity } from '../identity/identity.js';
import { scopeOf, scopeSql } from './project-scope.js';
import type { ReadKey, StoredVersion } from './types.js';
import type { VersionRow } from './versions.js';

/**
 * The store's reads by key, as single statements: the Repository decides what the cache answers
 * and what the caller may see.
 */

/**
 * The time as the ISO instant StoredVersion holds, made by PostgreSQL (whole milliseconds,
 * truncated, as a Date has them): the driver's Date, and the string made from it, were a share
 * of each read's CPU.
 */
export const LAST_UPDATED_INSTANT = `to_char("lastUpdated" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** One string made once: the driver looks its statement's name up by the text (a new string would be hashed at every read). */
const SELECT_CURRENT = `SELECT "projectId", "versionId"::text AS "versionId", ${LAST_UPDATED_INSTANT} AS "lastUpdated", deleted, content::text AS content
     FROM resource WHERE "resourceType" = $1 AND id = $2`;

const READ_BY_KEY: QueryOptions = { planOnce: true, pgValues: true };

interface CurrentVersionRow {
  projectId: string;
  versionId: string;
  lastUpdated: string;
  deleted: boolean;
  content: string | null;
}

/** The current version of one resource, whatever its project (the caller checks). Only what a read needs: the type and id are the caller's. */
export async function selectCurrent(db: SqlExecutor, resourceType: string, id: string): Promise<StoredVersion | undefined> {
  const rows = await db.query<CurrentVersionRow>(SELECT_CURRENT, [resourceType, id], READ_BY_KEY);
  const row = rows[0];
  if (row === undefined) return undefined;
  return { resourceType, projectId: row.projectId, id, versionId: row.versionId, lastUpdated: row.lastUpdated, deleted: row.deleted, text: row.content };
}

/**
 * One statement for any number of keys: the (resourceType, id, held version) triples travel as
 * one JSON argument. The text of a version the caller holds is not sent (it is null).
 *
 * Each key is looked up by primary key in a LATERAL subquery with LIMIT 1, which the planner cannot
 * merge into a join: a join of the key list with `resource`, planned once per connection while the
 * table was small, stays a hash join over a scan of the whole table as it grows (its plan is never
 * made again without fresh statistics). The per-key lookup is an index probe at any size.
 */
export const SELECT_CURRENT_MANY = `SELECT k.n::int AS n, r."projectId", r."versionId"::text AS "versionId", r."lastUpdated", r.deleted,
       CASE WHEN r."versionId"::text = k.v->>2 THEN NULL ELSE r.content::text END AS content
     FROM json_array_elements($1::json) WITH ORDINALITY AS k(v, n)
     CROSS JOIN LATERAL (
       SELECT x."projectId", x."versionId", x."lastUpdated", x.deleted, x.content FROM resource x
       WHERE x."resourceType" = k.v->>0 AND x.id = k.v->>1 LIMIT 1
     ) r`;

export async function selectCurrentMany(db: SqlExecutor, keys: readonly ReadKey[]): Promise<StoredVersion[]> {
  if (keys.length === 1 && keys[0].heldVersionId === undefined) {
    const version = await selectCurrent(db, keys[0].resourceType, keys[0].id);
    return version ? [version] : [];
  }
  // Each row names its key by position (`n`): the type and id are the key's, not sent back.
  const rows = await db.query<Omit<VersionRow, 'id'> & { n: number }>(
    SELECT_CURRENT_MANY,
    [JSON.stringify(keys.map((key) => [key.resourceType, key.id, key.heldVersionId ?? null]))],
    { planOnce: true },
  );
  return rows.map((row) => {
    const { resourceType, id } = keys[row.n - 1];
    return { resourceType, projectId: row.projectId, id, versionId: row.versionId, lastUpdated: toInstant(row.lastUpdated), deleted: row.deleted, text: row.content };
  });
}

/**
 * The history's rows of exact versions, each found by primary key (a LATERAL probe, for the reason
 * SELECT_CURRENT_MANY gives: a semi-join planned while the history was small scans all of it
 * later). `$1`: the versionIds as a JSON array; the project condition is appended.
 */
export function selectVersionTextsSql(projectCondition: string): string {
  return `SELECT h."versionId"::text AS "versionId", h.content::text AS content
     FROM json_array_elements_text($1::json) AS v(id)
     CROSS JOIN LATERAL (
       SELECT x."versionId", x.content FROM resource_history x WHERE x."versionId" = v.id::uuid AND ${projectCondition} LIMIT 1
     ) h`;
}

/** The stored text of exact versions (by versionId) in the caller's project(s), from the history in one statement. */
export async function selectVersionTexts(db: SqlExecutor, identity: Identity, versionIds: readonly string[]): Promise<Map<string, string>> {
  const args = new SqlArgs();
  args.add(JSON.stringify(versionIds));
  const scoped = scopeSql('x', 'projectId', scopeOf(identity), args);
  const rows = await db.query<{ versionId: string; content: string | null }>(selectVersionTextsSql(scoped ?? 'true'), args.values, { planOnce: true });
  const texts = new Map<string, string>();
  for (const row of rows) if (row.content !== null) texts.set(row.versionId, row.content);
  return texts;
}
