import { randomUUID } from 'node:crypto';
import type { Database, SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import { buildIndexRows } from '../indexing/indexer.js';
import { projectParameters, type ProjectParameters } from '../indexing/parameters.js';
import { search, searchServicesFor, type SearchContext } from '../search/service.js';
import { indexInsertClauses } from '../storage/sql.js';

/**
 * The search index holds the rows of current versions only, yet an export writes each resource
 * as it was at its transactionTime. A resource changed since is judged by the version written:
 * inside a transaction that is always rolled back, each such version is stored again under an id
 * of its own (a scratch copy: its resource row and the index rows built from it, as a write
 * would store them), and the queries run through the search service on those ids. Every
 * parameter, modifier and chain of the copy's own values works as in a search; `_has`, which
 * reads the rows of other resources that name the resource's real id, finds none for a copy.
 * Only new rows are written, under ids no one else knows: no row of the store is locked or
 * changed, and nothing stays once the transaction ends.
 */

/** A version read from the history, older than its resource's current one. */
export interface PastVersion {
  id: string;
  /** Its stored JSON text. */
  content: string;
}

/** Which of `versions` (of `type`, in the exporter's project) meet at least one of `queries`. */
export async function pastVersionsMatching(
  db: Database,
  ctx: SearchContext,
  type: string,
  queries: readonly [string, string][][],
  versions: readonly PastVersion[],
  groups: (ids: readonly string[]) => string[][],
): Promise<Set<string>> {
  const { projectId } = ctx.identity;
  const parameters = await projectParameters(db, projectId);
  const kept = new Set<string>();
  const rollback = new RolledBack();
  try {
    await db.transaction(async (tx) => {
      const realIds = new Map<string, string>();
      for (const version of versions) {
        const copy = randomUUID();
        realIds.set(copy, version.id);
        await insertCopy(tx, JSON.parse(version.content) as Resource, copy, projectId, parameters);
      }
      const services = searchServicesFor(ctx, { transaction: tx });
      for (const some of groups([...realIds.keys()])) {
        for (const params of queries) {
          const found = await search(services, type, [...params, ['_id', some.join(',')], ['_count', String(some.length)]], { withoutContent: true });
          for (const row of found.matches) kept.add(realIds.get(row.id)!);
        }
      }
      throw rollback;
    }, 'bulk');
  } catch (error) {
    if (error !== rollback) throw error;
  }
  return kept;
}

/** Thrown to end the scratch transaction with a rollback once its searches are answered. */
class RolledBack extends Error {}

/**
 * The resource row and index rows of `resource` under the id `copy`, in one statement. The JSON
 * keeps the real id: a Patient's own `_compartment` row names it, as its stored rows do.
 */
async function insertCopy(tx: SqlExecutor, resource: Resource, copy: string, projectId: string, parameters: ProjectParameters): Promise<void> {
  const meta = resource.meta ?? {};
  const args: unknown[] = [resource.resourceType, copy, projectId, meta.versionId ?? randomUUID(), meta.lastUpdated ?? new Date().toISOString(), JSON.stringify(resource)];
  const clauses = indexInsertClauses(buildIndexRows(resource, parameters), { type: '$1', id: '$2', project: '$3' }, args);
  await tx.execute(
    `${clauses.length > 0 ? `WITH ${clauses.join(',\n')} ` : ''}` +
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       VALUES ($1, $2, $3, $4::uuid, $5::timestamptz, false, $6::json)`,
    args,
  );
}
