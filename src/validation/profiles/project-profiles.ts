import { ALL_KEYS, changedResourceOf, resourceChangedTopic, type InvalidationBus } from '../../cache/invalidation.js';
import type { SqlExecutor } from '../../db/database.js';
import type { StructureDefinition } from '../../fhir/definitions.js';
import { ProfileLibrary, shippedProfiles } from './library.js';

/**
 * Each project's profile library, kept between requests: a write of a StructureDefinition drops
 * its project's entry once it commits, on this server at once and on the others through the
 * invalidation bus (watchProfiles); an entry is used for at most PROFILES_TTL_MS, which bounds
 * staleness should a notice be lost. A reload that finds the same ids and versions keeps the
 * library, and with it the profiles it compiled.
 */

export const PROFILES_TTL_MS = 10_000;
const MAX_CACHED_PROJECTS = 1_000;

interface Entry {
  library: ProfileLibrary;
  expires: number;
  versions: string;
}

const cache = new Map<string, Entry>();
/** Bumped on every change: a load that started before it must not fill the cache. */
let generation = 0;

/** The profiles a project sees: its StructureDefinitions, then the shipped ones. */
export async function projectProfiles(db: SqlExecutor, projectId: string): Promise<ProfileLibrary> {
  const now = Date.now();
  const hit = cache.get(projectId);
  if (hit && hit.expires > now) return hit.library;
  const started = generation;
  const versions = (await db.query<{ id: string; versionId: string }>(
    `SELECT id, "versionId"::text AS "versionId" FROM resource
     WHERE "projectId" = $1 AND "resourceType" = 'StructureDefinition' AND NOT deleted ORDER BY id`,
    [projectId],
  )).map((row) => `${row.id}@${row.versionId}`).join(',');
  const library = hit?.versions === versions ? hit.library : await loadLibrary(db, projectId);
  if (started === generation) {
    cache.delete(projectId);
    cache.set(projectId, { library, expires: now + PROFILES_TTL_MS, versions });
    if (cache.size > MAX_CACHED_PROJECTS) cache.delete(cache.keys().next().value!);
  }
  return library;
}

async function loadLibrary(db: SqlExecutor, projectId: string): Promise<ProfileLibrary> {
  const rows = await db.query<{ content: string }>(
    `SELECT content::text AS content FROM resource
     WHERE "projectId" = $1 AND "resourceType" = 'StructureDefinition' AND NOT deleted ORDER BY "lastUpdated", id`,
    [projectId],
  );
  const byUrl = new Map<string, StructureDefinition[]>();
  for (const row of rows) {
    const sd = JSON.parse(row.content) as StructureDefinition;
    if (typeof sd.url !== 'string') continue;
    const versions = byUrl.get(sd.url);
    if (versions) versions.push(sd);
    else byUrl.set(sd.url, [sd]);
  }
  return new ProfileLibrary(byUrl, shippedProfiles());
}

/** Forgets a project's profiles (ALL_KEYS: every project's). */
export function profilesChanged(projectId: string): void {
  generation++;
  if (projectId === ALL_KEYS) cache.clear();
  else cache.delete(projectId);
}

/** A StructureDefinition written on any server drops this server's copy of that project's profiles. */
export function watchProfiles(bus: InvalidationBus): void {
  bus.subscribe(resourceChangedTopic('StructureDefinition'), (key) => profilesChanged(changedResourceOf(key)?.projectId ?? ALL_KEYS));
}
