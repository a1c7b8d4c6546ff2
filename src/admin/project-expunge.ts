import type { Database, SqlExecutor } from '../db/database.js';
import type { BinaryStorage } from '../storage/binary-storage.js';
import { CommittedWrites } from '../storage/committed-writes.js';
import { expungeRows, type ExpungeKey } from '../storage/expunge.js';
import type { ResourceCache } from '../storage/resource-cache.js';
import type { InvalidationBus } from '../cache/invalidation.js';
import type { SearchCache } from '../cache/search-cache.js';
import { deleteSystem } from '../terminology/indexing.js';

/** What a project's expunge writes through. */
export interface ExpungeServices {
  readonly db: Database;
  readonly binaryStorage: BinaryStorage;
  readonly resourceCache: ResourceCache;
  readonly bus?: InvalidationBus;
  readonly searchCache?: SearchCache;
}

export interface ProjectExpungeOptions {
  readonly batchSize: number;
  /** Aborted: stop after the current batch (an AsyncJob cancelled). */
  readonly signal?: AbortSignal;
  /** After each committed batch, with the resources removed so far. */
  readonly onProgress?: (resources: number) => Promise<void>;
}

/**
 * Tables the resource expunge already empties for a project, or that are emptied below with rules
 * of their own; every other table with a "projectId" column (jobs, outbox and whatever is added
 * later) is emptied of the project's rows by the general sweep.
 */
const HANDLED_TABLES = new Set(['resource', 'resource_history', 'binary_content', 'auth_credential', 'terminology_system']);

/**
 * Removes a project's data for good, in batches of one transaction each: resources (with history,
 * index rows, bytes and write-hook rows), then what is stored for the project outside resources,
 * then the Project itself, last, so that an interrupted run is found and finished by the next one.
 * Users whose resource is in the project but who are members of another project stay, with their
 * password. Returns the resources removed (the Project not counted).
 */
export async function expungeProject(services: ExpungeServices, projectId: string, options: ProjectExpungeOptions): Promise<number> {
  const kept = await usersOfOtherProjects(services.db, projectId);
  let removed = 0;
  for (;;) {
    if (options.signal?.aborted) return removed;
    const keys = await expungeBatch(services, projectId, kept, options.batchSize);
    if (keys.length === 0) break;
    committedWrites(services).expunged(keys);
    removed += keys.length;
    await options.onProgress?.(removed);
  }
  await removeStoredObjects(services, projectId, options.batchSize);
  await services.db.transaction(async (tx) => {
    await tx.execute(`DELETE FROM auth_credential WHERE "projectId" = $1 AND NOT id = ANY($2::text[])`, [projectId, kept.map((id) => `User/${id}`)]);
    await deleteSystem(tx, '"projectId" = $1', [projectId]);
  }, 'bulk');
  await sweepProjectTables(services.db, projectId, options.batchSize);
  const project: ExpungeKey = { resourceType: 'Project', id: projectId, projectId };
  await services.db.transaction((tx) => expungeRows(tx, services.binaryStorage, [project]), 'bulk');
  committedWrites(services).expunged([project]);
  services.searchCache?.writtenAnywhere(projectId);
  return removed;
}

/** Users stored in the project that a membership of another project names. */
async function usersOfOtherProjects(db: SqlExecutor, projectId: string): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT u.id FROM resource u
     WHERE u."resourceType" = 'User' AND u."projectId" = $1
       AND EXISTS (SELECT 1 FROM reference_index m
                   WHERE m."resourceType" = 'ProjectMembership' AND m.code = 'user' AND m."targetType" = 'User'
                     AND m."targetId" = u.id AND m."projectId" <> $1)`,
    [projectId],
  );
  return rows.map((row) => row.id);
}

/** One transaction: up to `size` of the project's resources (not the Project, not kept Users). */
async function expungeBatch(services: ExpungeServices, projectId: string, kept: readonly string[], size: number): Promise<ExpungeKey[]> {
  return services.db.transaction(async (tx) => {
    const keys = await tx.query<ExpungeKey>(
      `SELECT "resourceType", id, "projectId" FROM resource
       WHERE "projectId" = $1 AND NOT ("resourceType" = 'Project' AND id = $1) AND NOT ("resourceType" = 'User' AND id = ANY($2::text[]))
       LIMIT $3 FOR UPDATE`,
      [projectId, kept, size],
    );
    await expungeRows(tx, services.binaryStorage, keys);
    return keys;
  }, 'bulk');
}

/** Stored objects no version names any more (bytes of a failed write, export files), by batch. */
async function removeStoredObjects(services: ExpungeServices, projectId: string, size: number): Promise<void> {
  for (;;) {
    const keys = await services.db.query<{ key: string }>('SELECT key FROM binary_content WHERE "projectId" = $1 LIMIT $2', [projectId, size]);
    if (keys.length === 0) return;
    await services.db.transaction(async (tx) => {
      for (const { key } of keys) await services.binaryStorage.delete(key, tx);
    }, 'bulk');
  }
}

/** Every other table with a "projectId" column, found in the catalog so that a new one is not forgotten. */
async function sweepProjectTables(db: Database, projectId: string, size: number): Promise<void> {
  const tables = await db.query<{ table: string }>(
    `SELECT table_name::text AS table FROM information_schema.columns
     WHERE table_schema = current_schema() AND column_name = 'projectId' ORDER BY table_name`,
  );
  for (const { table } of tables) {
    if (HANDLED_TABLES.has(table) || table.endsWith('_index')) continue;
    const quoted = `"${table.replaceAll('"', '""')}"`;
    while ((await db.execute(`DELETE FROM ${quoted} WHERE ctid IN (SELECT ctid FROM ${quoted} WHERE "projectId" = $1 LIMIT $2)`, [projectId, size])) > 0);
  }
}

function committedWrites(services: ExpungeServices): CommittedWrites {
  return new CommittedWrites(services.db, services.resourceCache, services.bus, services.searchCache);
}
