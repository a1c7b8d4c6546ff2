import { toInstant, type SqlExecutor } from '../db/database.js';
import { SqlArgs } from '../db/sql-args.js';
import type { Identity } from '../identity/identity.js';
import { scopeOf, scopeSql } from './project-scope.js';
import type { ReadKey, StoredVersion } from './types.js';
import { toStoredVersion, type VersionRow } from './versions.js';

/**
 * The store's reads by key, as single statements: the Repository decides what the cache answers
 * and what the caller may see.
 */

/** The current version of one resource, whatever its project (the caller checks). */
export async function selectCurrent(db: SqlExecutor, resourceType: string, id: string): Promise<StoredVersion | undefined> {
  const rows = await db.query<VersionRow>(
    `SELECT "projectId", id, "versionId"::text AS "versionId", "lastUpdated", deleted, content::text AS content
     FROM resource WHERE "resourceType" = $1 AND id = $2`,
    [resourceType, id],
    { planOnce: true },
  );
  return rows[0] ? toStoredVersion(resourceType, rows[0]) : undefined;
}

/**
 * One statement for any number of keys: the (resourceType, id, held version) triples travel as
 * one JSON argument. The text of a version the caller holds is not sent (it is null).
 */
export async function selectCurrentMany(db: SqlExecutor, keys: readonly ReadKey[]): Promise<StoredVersion[]> {
  // One key (a create's patient, a lone reference) by primary key: the list's join plan, made once
  // per connection, can fall to a scan of the resource table while its statistics are old.
  if (keys.length === 1 && keys[0].heldVersionId === undefined) {
    const version = await selectCurrent(db, keys[0].resourceType, keys[0].id);
    return version ? [version] : [];
  }
  // Each row names its key by position (`n`): the type and id are the key's, not sent back.
  const rows = await db.query<Omit<VersionRow, 'id'> & { n: number }>(
    `SELECT k.n::int AS n, r."projectId", r."versionId"::text AS "versionId", r."lastUpdated", r.deleted,
       CASE WHEN r."versionId"::text = k.v->>2 THEN NULL ELSE r.content::text END AS content
     FROM json_array_elements($1::json) WITH ORDINALITY AS k(v, n) JOIN resource r ON r."resourceType" = k.v->>0 AND r.id = k.v->>1`,
    [JSON.stringify(keys.map((key) => [key.resourceType, key.id, key.heldVersionId ?? null]))],
    { planOnce: true },
  );
  return rows.map((row) => {
    const { resourceType, id } = keys[row.n - 1];
    return { resourceType, projectId: row.projectId, id, versionId: row.versionId, lastUpdated: toInstant(row.lastUpdated), deleted: row.deleted, text: row.content };
  });
}

/** The stored text of exact versions (by versionId) in the caller's project(s), from the history in one statement. */
export async function selectVersionTexts(db: SqlExecutor, identity: Identity, versionIds: readonly string[]): Promise<Map<string, string>> {
  const args = new SqlArgs();
  args.add(JSON.stringify(versionIds));
  const scoped = scopeSql('resource_history', 'projectId', scopeOf(identity), args);
  const rows = await db.query<{ versionId: string; content: string | null }>(
    `SELECT "versionId"::text AS "versionId", content::text AS content FROM resource_history
     WHERE "versionId" IN (SELECT json_array_elements_text($1::json)::uuid) AND ${scoped ?? 'true'}`,
    args.values,
    { planOnce: true },
  );
  const texts = new Map<string, string>();
  for (const row of rows) if (row.content !== null) texts.set(row.versionId, row.content);
  return texts;
}
