import { toInstant, type SqlExecutor } from '../db/database.js';
import { SqlArgs } from '../db/sql-args.js';
import { errors } from '../fhir/outcome.js';
import { ID_PATTERN } from '../fhir/ids.js';
import type { Identity } from '../identity/identity.js';
import type { HistoryOptions, HistoryPage, StoredVersion } from './types.js';
import { isUuid, toStoredVersion, type VersionRow } from './versions.js';
import { canSee, scopeOf, scopeSql } from './project-scope.js';

/** One version of a resource from its history: 404 when it is not there or not visible, 410 for a deletion. */
export async function readHistoryVersion(db: SqlExecutor, identity: Identity, resourceType: string, id: string, versionId: string): Promise<StoredVersion> {
  if (!isUuid(versionId) || !ID_PATTERN.test(id)) {
    throw errors.notFound(`Version ${versionId} of ${resourceType}/${id} not found`);
  }
  const rows = await db.query<{ projectId: string; lastUpdated: unknown; deleted: boolean; content: string | null }>(
    `SELECT "projectId", "lastUpdated", deleted, content::text AS content FROM resource_history
     WHERE "versionId" = $1::uuid AND "resourceType" = $2 AND id = $3`,
    [versionId, resourceType, id],
  );
  const row = rows[0];
  if (!row || !canSee(identity, row.projectId)) {
    throw errors.notFound(`Version ${versionId} of ${resourceType}/${id} not found`);
  }
  if (row.deleted) throw errors.gone(`Version ${versionId} of ${resourceType}/${id} is a deletion`);
  return { resourceType, projectId: row.projectId, id, versionId, lastUpdated: toInstant(row.lastUpdated), deleted: false, text: row.content };
}

/** A page of a resource's or a type's history, newest first, in the caller's project(s). */
export async function readHistoryPage(
  db: SqlExecutor,
  identity: Identity,
  resourceType: string,
  id: string | undefined,
  options: HistoryOptions,
): Promise<HistoryPage> {
  const args = new SqlArgs();
  const where = [`"resourceType" = ${args.add(resourceType)}`];
  if (id !== undefined) where.push(`id = ${args.add(id)}`);
  const scoped = scopeSql('h', 'projectId', scopeOf(identity), args);
  if (scoped) where.push(scoped);
  if (options.since) where.push(`"lastUpdated" >= ${args.add(options.since, 'timestamptz')}`);
  const limit = args.add(options.count + 1);
  const offset = args.add(options.offset);
  const rows = await db.query<VersionRow & { first: boolean }>(
    `SELECT id, "projectId", "versionId"::text AS "versionId", "lastUpdated", deleted, content::text AS content,
       NOT EXISTS (SELECT 1 FROM resource_history p WHERE p."resourceType" = h."resourceType" AND p.id = h.id
                   AND p."lastUpdated" < h."lastUpdated") AS first
     FROM resource_history h WHERE ${where.join(' AND ')}
     ORDER BY "lastUpdated" DESC, "versionId" DESC LIMIT ${limit} OFFSET ${offset}`,
    args.values,
  );
  const versions = rows.slice(0, options.count).map((row) => ({ ...toStoredVersion(resourceType, row), first: row.first }));
  return { versions, hasMore: rows.length > options.count };
}
