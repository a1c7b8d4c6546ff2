import type { SqlExecutor } from '../db/database.js';
import { binaryKey, type BinaryStorage } from './binary-storage.js';
import { INDEX_TABLE_NAMES } from './sql.js';
import { writeHookOf } from './write-hooks.js';

/** A resource to remove for good. */
export interface ExpungeKey {
  readonly resourceType: string;
  readonly id: string;
  readonly projectId: string;
}

/**
 * Removes resources for good inside the caller's transaction: their index rows, every version in
 * history, the resource rows, the bytes of every version of a Binary, and what their types' write
 * hooks keep beside them (a CodeSystem's concepts), as for a deletion. Nothing is kept that could
 * bring them back: a read afterwards is 404, not 410.
 */
export async function expungeRows(tx: SqlExecutor, binaries: BinaryStorage, keys: readonly ExpungeKey[]): Promise<void> {
  if (keys.length === 0) return;
  const types = keys.map((key) => key.resourceType);
  const ids = keys.map((key) => key.id);
  for (const key of keys) await writeHookOf(key.resourceType)?.(tx, { ...key, resource: null });
  await deleteBinaryVersions(tx, binaries, keys.filter((key) => key.resourceType === 'Binary'));
  const keyed = `("resourceType", KEY) IN (SELECT * FROM unnest($1::text[], $2::text[]))`;
  for (const table of INDEX_TABLE_NAMES) await tx.execute(`DELETE FROM ${table} WHERE ${keyed.replace('KEY', '"resourceId"')}`, [types, ids]);
  await tx.execute(`DELETE FROM resource_history WHERE ${keyed.replace('KEY', 'id')}`, [types, ids]);
  await tx.execute(`DELETE FROM resource WHERE ${keyed.replace('KEY', 'id')}`, [types, ids]);
}

/** The bytes of every version of these Binaries (a deletion's version has none to remove). */
async function deleteBinaryVersions(tx: SqlExecutor, binaries: BinaryStorage, keys: readonly ExpungeKey[]): Promise<void> {
  if (keys.length === 0) return;
  const versions = await tx.query<{ id: string; projectId: string; versionId: string }>(
    `SELECT id, "projectId", "versionId"::text AS "versionId" FROM resource_history
     WHERE "resourceType" = 'Binary' AND id = ANY($1::text[]) AND NOT deleted`,
    [keys.map((key) => key.id)],
  );
  for (const version of versions) await binaries.delete(binaryKey(version.projectId, version.id, version.versionId), tx);
}

/** The resource as stored, locked for its expunge; undefined when there is none. */
export async function lockForExpunge(tx: SqlExecutor, resourceType: string, id: string): Promise<ExpungeKey | undefined> {
  const [row] = await tx.query<{ projectId: string }>('SELECT "projectId" FROM resource WHERE "resourceType" = $1 AND id = $2 FOR UPDATE', [resourceType, id]);
  return row && { resourceType, id, projectId: row.projectId };
}
