import { ID_PATTERN } from '../fhir/ids.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { applyJsonPatch } from './patch.js';
import { projectOf, retryOnCreateRace } from './current-rows.js';
import { replaceVersion, writeDeletion } from './sql.js';
import { binaryKey } from './binary-storage.js';
import type { StoredVersion, WriteOptions, WriteResult } from './types.js';
import { expungeRows, lockForExpunge } from './expunge.js';
import { insertNewResource } from './create-batches.js';
import { checkVersion, nextInstant, sameContent } from './versions.js';
import { assertType, type StoreContext } from './store-context.js';
import { newId } from './ids.js';

/**
 * The repository's writes of existing resources: update (and update-as-create), patch, delete and
 * expunge. Each locks the current row in a transaction and checks `If-Match` there.
 */

/**
 * Replaces a Binary's bytes (a raw PUT): always a new version, since the bytes are not in the JSON.
 * A securityContext not in `extra` is kept: it says whose compartment the file is in, which new
 * bytes do not change.
 */
export async function updateBinary(ctx: StoreContext, id: string, contentType: string, data: Uint8Array, options: WriteOptions, extra: Partial<Resource> = {}): Promise<WriteResult> {
  const versionId = newId();
  const input: Resource = { ...extra, resourceType: 'Binary', id, contentType };
  ctx.validate(input);
  // Bytes first, under the new version's key: a failed write leaves unreferenced bytes, never a
  // version without its bytes.
  const projectId = await projectOfExisting(ctx, 'Binary', id);
  await ctx.binaries.put(binaryKey(projectId, id, versionId), projectId, contentType, data, ctx.db.joined);
  return update(ctx, 'Binary', id, input, options, versionId, true, ['securityContext']);
}

/** Update, or create with the client's id when it does not exist yet (update-as-create). */
export async function update(
  ctx: StoreContext,
  resourceType: string,
  id: string,
  input: unknown,
  options: WriteOptions,
  versionId: string,
  alwaysNewVersion: boolean,
  /** Elements taken from the current version when the input has none (read under the write's lock). */
  carried: readonly string[] = [],
): Promise<WriteResult> {
  assertType(resourceType);
  ctx.validate(input, resourceType);
  if (input.id !== id) {
    throw errors.invalid(
      input.id === undefined
        ? `The body must carry id "${id}" to update ${resourceType}/${id}`
        : `The body id "${input.id}" does not match the URL id "${id}"`,
      `${resourceType}.id`,
    );
  }
  if (!ID_PATTERN.test(id)) throw errors.invalid(`Invalid id "${id}": use 1-64 of A-Z a-z 0-9 - .`, `${resourceType}.id`);
  let recorded = false;
  const result = await retryOnCreateRace(() =>
    ctx.db.transaction(async (tx): Promise<WriteResult> => {
      const current = await ctx.lockCurrent(tx, resourceType, id, 'update');
      if (!current) {
        if (options.ifMatch !== undefined) {
          throw errors.preconditionFailed(`${resourceType}/${id} does not exist, so it cannot match version ${options.ifMatch}`);
        }
        const completed = await ctx.completeAndCheck(tx, input, ctx.identity.projectId);
        const resource = ctx.stamp(await ctx.prepared(tx, completed, undefined), id, versionId);
        const text = await insertNewResource(tx, resource);
        recorded = await ctx.afterWrite(tx, resource, 'create');
        return { resource, text, created: true, changed: true };
      }
      checkVersion(current, options, resourceType, id);
      const existing = !current.deleted && current.content !== null ? (JSON.parse(current.content) as Resource) : undefined;
      const completed = await ctx.completeAndCheck(tx, withCarried(input, existing, carried), current.projectId);
      const next = await ctx.prepared(tx, completed, existing);
      if (!alwaysNewVersion && existing && sameContent(existing, next)) {
        return { resource: existing, text: current.content!, created: false, changed: false };
      }
      const resource = ctx.stamp(next, id, versionId, current.projectId, current);
      const text = await replaceVersion(tx, resource, current.projectId);
      recorded = await ctx.afterWrite(tx, resource, current.deleted ? 'create' : 'update');
      return { resource, text, created: current.deleted, changed: true };
    }),
  );
  if (result.changed) ctx.committed.written(result.resource, result.text);
  if (recorded) ctx.changes.committed();
  return result;
}

function withCarried(input: Resource, existing: Resource | undefined, carried: readonly string[]): Resource {
  if (!existing) return input;
  const kept = carried.filter((name) => input[name] === undefined && existing[name] !== undefined);
  return kept.length === 0 ? input : { ...input, ...Object.fromEntries(kept.map((name) => [name, existing[name]])) };
}

/** Applies a JSON Patch (RFC 6902) to the current version and stores the result as an update. */
export async function patchResource(ctx: StoreContext, resourceType: string, id: string, operations: unknown, options: WriteOptions): Promise<WriteResult> {
  assertType(resourceType);
  let recorded = false;
  const result = await ctx.db.transaction(async (tx): Promise<WriteResult> => {
    const current = await ctx.lockCurrent(tx, resourceType, id);
    if (!current) throw errors.notFound(`${resourceType}/${id} not found`);
    if (current.deleted || current.content === null) throw errors.gone(`${resourceType}/${id} was deleted`);
    checkVersion(current, options, resourceType, id);
    const before = JSON.parse(current.content) as Resource;
    const patched = applyJsonPatch(before, operations, ctx.patchLimits);
    ctx.validate(patched, resourceType);
    if (patched.id !== id) throw errors.invalid('A patch must not change the resource id', `${resourceType}.id`);
    const completed = await ctx.completeAndCheck(tx, patched, current.projectId);
    const next = await ctx.prepared(tx, completed, before);
    if (sameContent(before, next)) return { resource: before, text: current.content, created: false, changed: false };
    const resource = ctx.stamp(next, id, newId(), current.projectId, current);
    const text = await replaceVersion(tx, resource, current.projectId);
    recorded = await ctx.afterWrite(tx, resource, 'update');
    return { resource, text, created: false, changed: true };
  });
  if (result.changed) ctx.committed.written(result.resource, result.text);
  if (recorded) ctx.changes.committed();
  return result;
}

/** Deletes the resource: a new version marked deleted; reads give 410 afterwards. Idempotent. */
export async function deleteResource(ctx: StoreContext, resourceType: string, id: string, options: WriteOptions): Promise<void> {
  assertType(resourceType);
  let recorded = false;
  const deletion = await ctx.db.transaction(async (tx): Promise<StoredVersion | undefined> => {
    const current = await ctx.lockCurrent(tx, resourceType, id);
    if (!current) throw errors.notFound(`${resourceType}/${id} not found`);
    checkVersion(current, options, resourceType, id);
    if (current.deleted) return undefined;
    const version: StoredVersion = {
      resourceType,
      id,
      projectId: current.projectId,
      versionId: newId(),
      lastUpdated: nextInstant(current),
      deleted: true,
      text: null,
    };
    await writeDeletion(tx, version);
    recorded = await ctx.afterWrite(tx, null, 'delete', version);
    return version;
  });
  if (deletion) ctx.committed.deleted(deletion);
  if (recorded) ctx.changes.committed();
}

/** Removes a resource of the caller's project (any project for a super admin) for good, history and bytes included. */
export async function expungeResource(ctx: StoreContext, resourceType: string, id: string): Promise<void> {
  assertType(resourceType);
  const key = await ctx.db.transaction(async (tx) => {
    const found = await lockForExpunge(tx, resourceType, id);
    if (!found || !ctx.canSee(found.projectId)) throw errors.notFound(`${resourceType}/${id} not found`);
    await expungeRows(tx, ctx.binaries, [found]);
    return found;
  });
  ctx.committed.expunged([key]);
}

/** The project an existing resource belongs to, or the caller's project for a new id. */
async function projectOfExisting(ctx: StoreContext, resourceType: string, id: string): Promise<string> {
  const projectId = await projectOf(ctx.db, resourceType, id);
  return projectId !== undefined && ctx.canSee(projectId) ? projectId : ctx.identity.projectId;
}
