import { ID_PATTERN } from '../fhir/ids.js';
import type { SqlExecutor } from '../db/database.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { projectOf } from './current-rows.js';
import { binaryKey, type BinaryStream } from './binary-storage.js';
import { keyOf, type HistoryOptions, type HistoryPage, type ReadKey, type StoredVersion, type VersionKey } from './types.js';
import { readHistoryPage, readHistoryVersion } from './history.js';
import { selectCurrent, selectCurrentMany, selectVersionTexts } from './current-versions.js';
import { isUuid } from './versions.js';
import { assertType, type StoreContext } from './store-context.js';

/** The repository's reads: current versions (through the cache), exact versions, history and Binary bytes. */

/**
 * Reads the current version as stored text (the read hot path: no parse, no re-serialise). A
 * replica's version may be older than one this server has cached or will learn: it never fills the cache.
 */
export async function readVersion(ctx: StoreContext, resourceType: string, id: string, from: 'reader' | 'primary'): Promise<StoredVersion> {
  assertType(resourceType);
  if (!ID_PATTERN.test(id)) throw errors.notFound(`${resourceType}/${id} not found`);
  let version = ctx.cache.get(resourceType, id);
  if (version === undefined) {
    const reader = from === 'primary' ? { db: ctx.db, replica: false } : ctx.reader();
    version = await selectCurrent(reader.db, resourceType, id);
    if (version && !reader.replica) ctx.cache.fill(version);
  }
  if (!version || !ctx.canSee(version.projectId)) throw errors.notFound(`${resourceType}/${id} not found`);
  if (version.deleted) throw errors.gone(`${resourceType}/${id} was deleted`);
  return version;
}

/**
 * Current versions of many resources at once, for batched reference loads (GraphQL's
 * `Reference.resource`): cached versions from the cache, the rest in one statement. Unlike
 * readVersion it never throws for a single key: a key of an unknown type, a malformed id, a
 * missing or deleted resource, or one of a project the caller cannot see is simply absent from
 * the result (keyed `Type/id`). A key's `heldVersionId` spares loading a text the caller holds.
 */
export async function readVersions(ctx: StoreContext, keys: readonly ReadKey[]): Promise<Map<string, StoredVersion>> {
  const found = new Map<string, StoredVersion>();
  const reader = ctx.reader();
  const cache = ctx.cache.enabled ? ctx.cache : undefined;
  // Keys are expected once each (a key given twice is read twice): cheaper than a map of keys.
  const missing: ReadKey[] = [];
  for (const key of keys) {
    if (!isResourceType(key.resourceType) || !ID_PATTERN.test(key.id)) continue;
    const cached = cache?.get(key.resourceType, key.id);
    if (cached) {
      if (!cached.deleted && ctx.canSee(cached.projectId)) found.set(keyOf(key), cached);
    } else missing.push(key);
  }
  if (missing.length > 0) {
    for (const version of await selectCurrentMany(reader.db, missing)) {
      // A held version came without its text: nothing to cache.
      if (cache && !reader.replica && (version.text !== null || version.deleted)) cache.fill(version);
      if (!version.deleted && ctx.canSee(version.projectId)) found.set(keyOf(version), version);
    }
  }
  return found;
}

/**
 * The stored JSON text of exact versions (keyed by versionId), for callers that found them with
 * a search that returned no content (GraphQL lists on the embedded database): from the cache
 * when it holds that very version, the others from the history in one statement. The caller's
 * search already decided they are visible; a version id that does not exist is left out.
 */
export async function readVersionTexts(ctx: StoreContext, versions: readonly VersionKey[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const missing: string[] = [];
  for (const version of versions) {
    const cached = ctx.cache.get(version.resourceType, version.id);
    if (cached?.versionId === version.versionId && cached.text !== null && ctx.canSee(cached.projectId)) texts.set(version.versionId, cached.text);
    else if (isUuid(version.versionId)) missing.push(version.versionId);
  }
  if (missing.length === 0) return texts;
  for (const [versionId, text] of await selectVersionTexts(ctx.reader().db, ctx.identity, missing)) texts.set(versionId, text);
  return texts;
}

export function readVersionOf(ctx: StoreContext, resourceType: string, id: string, versionId: string, from: 'reader' | 'primary'): Promise<StoredVersion> {
  assertType(resourceType);
  return readHistoryVersion(from === 'primary' ? ctx.db : ctx.reader().db, ctx.identity, resourceType, id, versionId);
}

/** History of one resource (id given), a whole type, or every type (no type) in the caller's project, newest first. */
export async function history(ctx: StoreContext, resourceType: string | undefined, id: string | undefined, options: HistoryOptions): Promise<HistoryPage> {
  if (resourceType !== undefined) assertType(resourceType);
  // One source for the check and the page: a replica could otherwise miss what the primary has.
  const reader = ctx.reader().db;
  if (resourceType !== undefined && id !== undefined) await assertExists(ctx, reader, resourceType, id);
  return readHistoryPage(reader, ctx.identity, resourceType, id, options);
}

async function assertExists(ctx: StoreContext, reader: SqlExecutor, resourceType: string, id: string): Promise<void> {
  const projectId = await projectOf(reader, resourceType, id);
  if (projectId === undefined || !ctx.canSee(projectId)) throw errors.notFound(`${resourceType}/${id} not found`);
}

export async function readBinaryData(ctx: StoreContext, version: StoredVersion): Promise<Uint8Array | undefined> {
  if (!ctx.canSee(version.projectId)) return undefined;
  return (await ctx.binaries.get(binaryKey(version.projectId, version.id, version.versionId)))?.data;
}

export async function readBinaryStream(ctx: StoreContext, version: StoredVersion): Promise<BinaryStream | undefined> {
  if (!ctx.canSee(version.projectId)) return undefined;
  return ctx.binaries.getStream(binaryKey(version.projectId, version.id, version.versionId));
}
