import type { SqlExecutor } from '../../db/database.js';
import { isRecord } from '../../fhir/types.js';

/**
 * `Project.setting` entry (Medplum's list of `{ name, value[x] }`) that makes writes naming an
 * unknown profile in meta.profile fail with 400 instead of being stored unchecked.
 */
export const UNKNOWN_PROFILES_SETTING = 'refuseUnknownProfiles';

/** Read when a resource names an unknown profile only, so an ordinary write never pays for it. */
export async function refusesUnknownProfiles(db: SqlExecutor, projectId: string): Promise<boolean> {
  const rows = await db.query<{ setting: string | null }>(
    `SELECT (content->'setting')::text AS setting FROM resource WHERE "resourceType" = 'Project' AND id = $1 AND NOT deleted`,
    [projectId],
  );
  const text = rows[0]?.setting;
  const settings: unknown = text ? JSON.parse(text) : undefined;
  return Array.isArray(settings) && settings.some((entry) => isRecord(entry) && entry.name === UNKNOWN_PROFILES_SETTING && entry.valueBoolean === true);
}
