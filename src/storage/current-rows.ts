import { toInstant, type SqlExecutor } from '../db/database.js';
import { ID_PATTERN } from '../fhir/ids.js';
import { errors } from '../fhir/outcome.js';
import { isUniqueViolation } from './db-errors.js';

/** A resource's current row as a write reads it (before replacing it). */
export interface CurrentRow {
  projectId: string;
  versionId: string;
  lastUpdated: string;
  deleted: boolean;
  content: string | null;
}

/** The project holding `resourceType/id` (deleted or not), whatever the caller may see, or undefined. */
export async function projectOf(executor: SqlExecutor, resourceType: string, id: string): Promise<string | undefined> {
  const rows = await executor.query<{ projectId: string }>('SELECT "projectId" FROM resource WHERE "resourceType" = $1 AND id = $2', [resourceType, id]);
  return rows[0]?.projectId;
}

/**
 * The current row, locked for the rest of the transaction so concurrent writers queue; undefined
 * for an id that cannot exist or a resource that does not.
 */
export async function lockCurrentRow(tx: SqlExecutor, resourceType: string, id: string): Promise<CurrentRow | undefined> {
  if (!ID_PATTERN.test(id)) return undefined;
  const rows = await tx.query<CurrentRow>(
    `SELECT "projectId", "versionId"::text AS "versionId", "lastUpdated", deleted, content::text AS content
     FROM resource WHERE "resourceType" = $1 AND id = $2 FOR UPDATE`,
    [resourceType, id],
  );
  return rows[0] && { ...rows[0], lastUpdated: toInstant(rows[0].lastUpdated) };
}

/**
 * Ids are unique on the whole server, whichever project holds them: the same answer whoever holds
 * the id (and whether it is deleted), so it reveals nothing else.
 */
export function idInUse(resourceType: string, id: string) {
  return errors.conflict(`The id ${id} is already in use for ${resourceType} on this server; choose another id (a UUID avoids collisions)`);
}

class CreateRace extends Error {
  constructor() {
    super('A resource with this id was created concurrently');
  }
}

/** Runs an insert of a new id, turning the primary key's unique violation into a CreateRace (retryOnCreateRace). */
export async function insertingNewId<T>(insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (error) {
    if (isUniqueViolation(error)) throw new CreateRace();
    throw error;
  }
}

/** Two update-as-creates of one new id race on the primary key; the loser retries as an update. */
export async function retryOnCreateRace<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof CreateRace) return write();
    throw error;
  }
}
