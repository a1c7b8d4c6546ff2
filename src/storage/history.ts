import { toInstant, type SqlExecutor } from '../db/database.js';
import { SqlArgs } from '../db/sql-args.js';
import { errors } from '../fhir/outcome.js';
import { ID_PATTERN } from '../fhir/ids.js';
import type { Identity } from '../identity/identity.js';
import type { HistoryOptions, HistoryPage, StoredVersion } from './types.js';
import { isUuid, toStoredVersion, type VersionRow } from './versions.js';
import { canSee, narrowedScope, scopeSql } from './project-scope.js';
import { decodeCursor, encodeCursor, HISTORY_TOP } from './history-cursor.js';
import { getPrimitiveType } from '../validation/primitives.js';

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

const INSTANT = getPrimitiveType('instant')!;

/** A version row of a history page: with its type (a system history spans them) and whether it created the resource. */
interface HistoryRow extends VersionRow {
  resourceType: string;
  first: boolean;
}

/**
 * A page of history, newest first, in the caller's project(s): of one resource (type and id), of a
 * type (id undefined), or of every type (both undefined: system history). Paged by offset or by
 * the cursor of the previous page (nextCursor, given whenever there are more versions).
 */
export async function readHistoryPage(
  db: SqlExecutor,
  identity: Identity,
  resourceType: string | undefined,
  id: string | undefined,
  options: HistoryOptions,
): Promise<HistoryPage> {
  const args = new SqlArgs();
  const where = [...scopeConditions(identity, resourceType, id, options.projectId, args), ...pageConditions(options, args)];
  const limit = args.add(options.count + 1);
  const offset = args.add(options.offset ?? 0);
  // `first` decides POST or PUT in the history Bundle. Versions written in one millisecond are
  // ordered by versionId, here as in the page's order and `_at`, so that exactly one of them is first.
  const rows = await db.query<HistoryRow>(
    `SELECT h."resourceType", h.id, h."projectId", h."versionId"::text AS "versionId", h."lastUpdated", h.deleted, h.content::text AS content,
       NOT EXISTS (SELECT 1 FROM resource_history p WHERE p."resourceType" = h."resourceType" AND p.id = h.id
                   AND (p."lastUpdated", p."versionId") < (h."lastUpdated", h."versionId")) AS first
     FROM resource_history h WHERE ${where.join(' AND ')}
     ORDER BY h."lastUpdated" DESC, h."versionId" DESC LIMIT ${limit} OFFSET ${offset}`,
    args.values,
  );
  const versions = rows.slice(0, options.count).map((row) => ({ ...toStoredVersion(row.resourceType, row), first: row.first }));
  const last = versions.at(-1);
  const hasMore = rows.length > options.count;
  return hasMore && last ? { versions, hasMore, nextCursor: encodeCursor(last) } : { versions, hasMore };
}

/** Which versions: of the resource, the type or every type, within the caller's scope. */
function scopeConditions(identity: Identity, resourceType: string | undefined, id: string | undefined, projectId: string | undefined, args: SqlArgs): string[] {
  const scope = narrowedScope(identity, projectId);
  if (resourceType === undefined) {
    if (id !== undefined) throw errors.invalid('The history of one resource needs its type', 'id');
    return present(scopeSql('h', 'projectId', scope, args));
  }
  const type = args.add(resourceType);
  if (id === undefined) return [`h."resourceType" = ${type}`, ...present(scopeSql('h', 'projectId', scope, args))];
  const key = args.add(id);
  const versions = [`h."resourceType" = ${type}`, `h.id = ${key}`];
  // A resource's versions all belong to its project (ids are global and never change project), so
  // the scope is checked once, on its current row. On the versions it would make the (project,
  // type) index look as good as the resource's own to a planner without statistics, and that one
  // reads every version of the type.
  const scoped = scopeSql('r', 'projectId', scope, args);
  if (scoped) versions.push(`EXISTS (SELECT 1 FROM resource r WHERE r."resourceType" = ${type} AND r.id = ${key} AND ${scoped})`);
  return versions;
}

/** Where the page starts and what it keeps: cursor, `_since`, `_at` and types left out. */
function pageConditions(options: HistoryOptions, args: SqlArgs): string[] {
  const from = options.cursor === undefined ? HISTORY_TOP : decodeCursor(options.cursor);
  // Bounded even on the first page: with a range on its columns, the index in page order is the
  // obvious plan, statistics or not. Without one, a planner without statistics (PGlite; PostgreSQL
  // before its first ANALYZE) guesses a type has a few versions and reads and sorts all of them.
  const where = [`(h."lastUpdated", h."versionId") < (${args.add(from.lastUpdated, 'timestamptz')}, ${args.add(from.versionId, 'uuid')})`];
  if (options.since !== undefined) where.push(`h."lastUpdated" >= ${args.add(instantOption('_since', options.since), 'timestamptz')}`);
  if (options.at !== undefined) where.push(...currentAt(options.at, args));
  // Types are only ever left out (`<> ALL`, which no index serves). A list of types to keep would be
  // a condition on the (project, type) index, selective enough to a planner without statistics that
  // it reads those types' versions whole and sorts them.
  if (options.excludeTypes?.length) {
    where.push(`NOT (h."resourceType" = ANY(ARRAY(SELECT json_array_elements_text(${args.add(JSON.stringify(options.excludeTypes))}::json))))`);
  }
  return where;
}

/**
 * `_at`: each resource's version current at the instant, the newest at or before it (a deletion
 * shows as one). Tested per version read, from the resource's own index, so the page is still read
 * in order and stops at its end.
 */
function currentAt(at: string, args: SqlArgs): string[] {
  const instant = args.add(instantOption('_at', at), 'timestamptz');
  return [
    `h."lastUpdated" <= ${instant}`,
    `NOT EXISTS (SELECT 1 FROM resource_history n WHERE n."resourceType" = h."resourceType" AND n.id = h.id
       AND n."lastUpdated" <= ${instant} AND (n."lastUpdated", n."versionId") > (h."lastUpdated", h."versionId"))`,
  ];
}

/** `_since` and `_at` are instants (FHIR's `_since` is one too): a date alone is refused, not read as midnight in some zone. */
function instantOption(name: string, value: string): string {
  if (INSTANT.check(value as never) !== undefined) {
    throw errors.invalid(`${name} must be an instant such as 2024-01-31T12:00:00Z, not "${value}"`, name);
  }
  return value;
}

function present(condition: string | undefined): string[] {
  return condition === undefined ? [] : [condition];
}
