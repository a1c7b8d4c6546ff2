import { ALL_KEYS, changedResourceOf, resourceChangedTopic, type InvalidationBus } from '../cache/invalidation.js';
import type { SqlExecutor } from '../db/database.js';
import type { Identity } from '../identity/identity.js';

/**
 * The Binaries that hold a Bot's code: those any version of a Bot of the project (deleted Bots
 * included) names as its `executableCode` or `sourceCode`. Bot code often carries the keys of
 * the systems it calls, so only project admins and super admins may see them; every other caller
 * is answered as if they did not exist (404), on every path that shows a resource (src/access,
 * the search service, $everything, subscription matching), and a bulk export never writes them.
 *
 * A project's set is read once per server (one statement over its Bot versions: Bots are few) and
 * kept until a Bot of the project is written, on any server (the cache notice of a Bot write), or
 * for at most KEPT_MS. A Binary read or search by a member costs a map lookup.
 */

/** How long a project's set is kept at most, should a cache notice be lost. */
const KEPT_MS = 60_000;
/** Projects whose sets are kept; the least recently read go first. */
const MAX_PROJECTS = 10_000;

const kept = new Map<string, { ids: Set<string>; expires: number }>();
/** Counts notices, so that a set read while a Bot write committed is not kept (it may be older). */
let generation = 0;

/** Whether the caller may see Bot code: project admins (of their project, the only one they see) and super admins. */
export function seesBotCode(identity: Identity): boolean {
  return identity.superAdmin || identity.projectAdmin === true;
}

/**
 * The ids of the project's Bot code Binaries. `db`: the primary or the caller's transaction
 * (a replica could miss a Bot write the Binary's own read already shows).
 */
export async function botCodeBinaryIds(db: SqlExecutor, projectId: string): Promise<Set<string>> {
  const now = Date.now();
  const hit = kept.get(projectId);
  if (hit && hit.expires > now) {
    kept.delete(projectId);
    kept.set(projectId, hit);
    return hit.ids;
  }
  const started = generation;
  const ids = await selectBotCodeBinaryIds(db, projectId);
  if (started === generation) {
    kept.delete(projectId);
    kept.set(projectId, { ids, expires: now + KEPT_MS });
    if (kept.size > MAX_PROJECTS) kept.delete(kept.keys().next().value!);
  }
  return ids;
}

/** Whether `Binary/{id}` of the project holds a Bot's code. */
export async function isBotCode(db: SqlExecutor, projectId: string, id: string): Promise<boolean> {
  return (await botCodeBinaryIds(db, projectId)).has(id);
}

/**
 * Items without the Bot code Binaries of the caller's project, unless the caller may see them
 * (then `items` itself, as when no item is a Binary: no copy, no lookup).
 */
export async function withoutBotCode<A extends readonly { resourceType: string; id: string }[]>(db: SqlExecutor, identity: Identity, items: A): Promise<A> {
  if (seesBotCode(identity) || !items.some((item) => item.resourceType === 'Binary')) return items;
  const ids = await botCodeBinaryIds(db, identity.projectId);
  // The same items, fewer of them: still an array of the caller's type.
  return ids.size === 0 ? items : (items.filter((item) => item.resourceType !== 'Binary' || !ids.has(item.id)) as unknown as A);
}

/** Every server drops a project's set when a Bot of it is written anywhere. */
export function watchBotCode(bus: InvalidationBus): void {
  bus.subscribe(resourceChangedTopic('Bot'), (key) => {
    generation++;
    const projectId = key === ALL_KEYS ? undefined : changedResourceOf(key)?.projectId;
    if (projectId === undefined) kept.clear();
    else kept.delete(projectId);
  });
}

/**
 * One statement, never cached (a bulk export reads it at each run): the Binary ids every version
 * of the project's Bots names. An attachment URL names a Binary as `Binary/{id}`, absolute or
 * with a `_history` version.
 */
export async function selectBotCodeBinaryIds(db: SqlExecutor, projectId: string): Promise<Set<string>> {
  const rows = await db.query<{ url: string | null }>(
    `SELECT DISTINCT code.url FROM resource_history h,
       LATERAL (VALUES (h.content::jsonb #>> '{executableCode,url}'), (h.content::jsonb #>> '{sourceCode,url}')) AS code(url)
     WHERE h."projectId" = $1 AND h."resourceType" = 'Bot' AND NOT h.deleted`,
    [projectId],
  );
  const ids = new Set<string>();
  for (const { url } of rows) {
    const id = url?.match(/(?:^|\/)Binary\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/)?.[1];
    if (id) ids.add(id);
  }
  return ids;
}
