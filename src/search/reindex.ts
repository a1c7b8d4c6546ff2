import type { Database, SqlExecutor } from '../db/database.js';
import { getResourceTypes, isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { INDEX_TABLE_NAMES, INDEX_TABLES } from '../storage/sql.js';
import type { IndexRows } from '../indexing/row-types.js';
import { buildIndexRows } from '../indexing/indexer.js';
import { loadProjectParameters, type ProjectParameters } from '../indexing/parameters.js';
import type { SearchCache } from '../cache/search-cache.js';

/**
 * Rebuilds the search index rows of stored resources from their current content, with the row
 * builder writes use (buildIndexRows, with each project's own SearchParameters): for resources
 * written before an indexing change (migration 0005 added composite and `:identifier` rows), and
 * for resources written before a project's SearchParameter existed.
 *
 * Resources are visited type by type in primary-key order, a batch at a time (keyset paging on
 * the id, so memory and the cost of a batch do not grow with the table). Each batch is one
 * transaction that locks its resource rows (FOR UPDATE, as writes do), so a concurrent update
 * either lands before the batch reads the content or waits for it: rows never come from stale
 * content. Versions, history and `lastUpdated` are not touched.
 */

export const DEFAULT_BATCH_SIZE = 500;

export interface ReindexOptions {
  /** Only this project's resources (all projects when absent). */
  projectId?: string;
  /** Only these resource types (every type when absent). */
  resourceTypes?: readonly string[];
  batchSize?: number;
  /** Called after every batch; the next batch waits for a returned promise. */
  onProgress?: (progress: ReindexProgress) => void | Promise<void>;
  /** Told of every committed batch: kept search answers of the reindexed types in the batch's projects are void. */
  searchCache?: SearchCache;
  /** Checked before every batch: once aborted, the reindex stops there and returns what it did (`stopped`). */
  signal?: AbortSignal;
  /** Continues a reindex that stopped (its server did) from its last reported progress. */
  resumeFrom?: ReindexPosition;
}

/** Where a reindex stands: after the id `after` of `resourceType`, with what it has done so far. */
export interface ReindexPosition {
  resourceType: string;
  after: string;
  byType: { resourceType: string; resources: number }[];
}

export interface ReindexProgress {
  resourceType: string;
  /** Resources of `resourceType` reindexed so far. */
  resources: number;
  /** Resources of every type reindexed so far. */
  total: number;
  /** Where a resumed reindex starts: every batch before it is committed. */
  position: ReindexPosition;
}

export interface ReindexResult {
  /** Resources whose index rows were rebuilt (deleted resources are not counted). */
  resources: number;
  /** Per type, for the types that had resources. */
  byType: { resourceType: string; resources: number }[];
  /** True when `signal` stopped it before every batch was done. */
  stopped: boolean;
}

interface ResourceRow {
  id: string;
  projectId: string;
  content: string | null;
}

export async function reindex(db: Database, options: ReindexOptions = {}): Promise<ReindexResult> {
  const types = options.resourceTypes ?? getResourceTypes();
  for (const type of types) {
    if (!isResourceType(type)) throw errors.invalid(`Unknown resource type "${type}" to reindex`, 'type');
  }
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  // Read once per run, uncached: a reindex must use the definitions as they are now.
  const parameters = new Map<string, ProjectParameters>();
  const start = options.resumeFrom;
  const result: ReindexResult = {
    resources: start?.byType.reduce((sum, entry) => sum + entry.resources, 0) ?? 0,
    byType: start?.byType.filter((entry) => entry.resourceType !== start.resourceType) ?? [],
    stopped: false,
  };
  const skip = start ? Math.max(0, types.indexOf(start.resourceType)) : 0;
  for (const resourceType of types.slice(skip)) {
    const resumed = start?.resourceType === resourceType;
    let after = resumed ? start.after : '';
    let done = resumed ? (start.byType.find((entry) => entry.resourceType === resourceType)?.resources ?? 0) : 0;
    for (;;) {
      if (options.signal?.aborted) {
        result.stopped = true;
        break;
      }
      const batch = await db.transaction((tx) => reindexBatch(tx, resourceType, after, batchSize, options.projectId, parameters), 'bulk');
      if (batch.rows === 0) break;
      // Only the projects whose rows the batch rebuilt: a reindex of every project voids no
      // kept answer of a project without resources of the type.
      for (const projectId of batch.projects) options.searchCache?.written(projectId, resourceType);
      after = batch.lastId;
      done += batch.live;
      result.resources += batch.live;
      const byType = [...result.byType, { resourceType, resources: done }];
      await options.onProgress?.({ resourceType, resources: done, total: result.resources, position: { resourceType, after, byType } });
      if (batch.rows < batchSize) break;
    }
    if (done > 0) result.byType.push({ resourceType, resources: done });
    if (result.stopped) break;
  }
  return result;
}

/** One batch: the next resources after `after`, locked, their index rows replaced. */
async function reindexBatch(
  tx: SqlExecutor,
  resourceType: string,
  after: string,
  batchSize: number,
  projectId: string | undefined,
  parameters: Map<string, ProjectParameters>,
): Promise<{ rows: number; live: number; lastId: string; projects: ReadonlySet<string> }> {
  const args: unknown[] = [resourceType, after, batchSize];
  if (projectId !== undefined) args.push(projectId);
  const rows = await tx.query<ResourceRow>(
    `SELECT id, "projectId", content::text AS content FROM resource
     WHERE "resourceType" = $1 AND id > $2${projectId !== undefined ? ' AND "projectId" = $4' : ''}
     ORDER BY id LIMIT $3 FOR UPDATE`,
    args,
  );
  if (rows.length === 0) return { rows: 0, live: 0, lastId: after, projects: new Set() };
  const built: { row: ResourceRow; rows: IndexRows }[] = [];
  for (const row of rows) {
    if (row.content === null) continue;
    if (!parameters.has(row.projectId)) parameters.set(row.projectId, await loadProjectParameters(tx, row.projectId));
    built.push({ row, rows: buildIndexRows(JSON.parse(row.content) as Resource, parameters.get(row.projectId)) });
  }
  await deleteIndexRows(tx, resourceType, rows.map((row) => row.id));
  await insertIndexRows(tx, resourceType, built);
  return { rows: rows.length, live: built.length, lastId: rows[rows.length - 1].id, projects: new Set(rows.map((row) => row.projectId)) };
}

/** Every index row of the resources `ids` of one type, all tables, in one statement. */
async function deleteIndexRows(tx: SqlExecutor, resourceType: string, ids: readonly string[]): Promise<void> {
  const clauses = INDEX_TABLE_NAMES.map(
    (table) =>
      `d_${table} AS (DELETE FROM ${table} WHERE "resourceType" = $1 AND "resourceId" IN (SELECT json_array_elements_text($2::json)))`,
  );
  await tx.execute(`WITH ${clauses.join(',\n')} SELECT 1`, [resourceType, JSON.stringify(ids)]);
}

/**
 * The rows of many resources, one statement per index table: each row carries its resource's id,
 * project and position (`seq`, 1-based per resource and table, as a single write numbers them).
 */
async function insertIndexRows(tx: SqlExecutor, resourceType: string, built: readonly { row: ResourceRow; rows: IndexRows }[]): Promise<void> {
  for (const [kind, spec] of Object.entries(INDEX_TABLES) as [keyof IndexRows, (typeof INDEX_TABLES)[keyof IndexRows]][]) {
    const records = built.flatMap(({ row, rows }) =>
      rows[kind].map((indexRow, index) => ({ ...indexRow, projectId: row.projectId, resourceId: row.id, seq: index + 1 })),
    );
    if (records.length === 0) continue;
    const names = spec.columns.map(([name]) => `"${name}"`).join(', ');
    const recordType = spec.columns.map(([name, type]) => `"${name}" ${type}`).join(', ');
    await tx.execute(
      `INSERT INTO ${spec.table} ("projectId", "resourceType", "resourceId", seq, ${names})
       SELECT "projectId", $1, "resourceId", seq, ${names}
       FROM json_to_recordset($2::json) AS x("projectId" text, "resourceId" text, seq int, ${recordType})`,
      [resourceType, JSON.stringify(records)],
    );
  }
}
