import type { Resource } from '../fhir/types.js';
import type { SqlExecutor } from '../db/database.js';
import { FIRST_VERSIONS, firstVersionsStatement, insertFirstVersions } from './sql.js';
import { binaryKey } from './binary-storage.js';
import { ItemError, isPrepared, type NewResource, type PreparedCreates, type WriteResult } from './types.js';
import { writeHookOf } from './write-hooks.js';
import { creationOf, type Change, type ChangeLog } from './change-log.js';
import { insertNewResource } from './create-batches.js';
import { assertType, type StoreContext } from './store-context.js';
import { newId } from './ids.js';

/**
 * The repository's creates. A plain create is one statement, grouped with others that arrive at
 * the same time, and carries its change-log row; a create of a type with a write hook or a write
 * check runs in a transaction of its own, where those run.
 */

export async function createResource(ctx: StoreContext, resourceType: string, input: unknown, id: string): Promise<WriteResult> {
  assertType(resourceType);
  ctx.validate(input, resourceType);
  const completed = await ctx.completeAndCheck(ctx.db, input, ctx.identity.projectId);
  const resource = ctx.stamp(await ctx.prepared(ctx.db, completed, undefined), id, newId());
  const inTransaction = writeHookOf(resourceType) !== undefined || ctx.checksWrites(resourceType);
  let recorded = false;
  let text: string;
  if (inTransaction) {
    text = await ctx.db.transaction(async (tx) => {
      const written = await insertNewResource(tx, resource);
      recorded = await ctx.afterWrite(tx, resource, 'create');
      return written;
    });
  } else {
    // Recorded by the create's own statement, which can then be grouped with others.
    const log = await ctx.changes.logFor(ctx.db, ctx.identity.projectId, resourceType);
    text = await insertAlone(ctx, resource, log);
    recorded = log !== undefined;
  }
  ctx.committed.written(resource, text);
  if (recorded) ctx.changes.committed();
  return { resource, text, created: true, changed: true };
}

/**
 * Creates many resources, each with its given id: one statement for all of them (resource,
 * history and index rows, and their changes when the change log records them) when no write
 * check or hook applies to their types, else one create each. A resource that fails validation is an ItemError naming its place in `items`.
 */
export async function createResources(ctx: StoreContext, input: readonly NewResource[] | PreparedCreates): Promise<WriteResult[]> {
  const prepared = isPrepared(input) ? input : await prepareCreates(ctx, input);
  if (!prepared.together) return createEach(ctx, prepared.items);
  const { resources, statement, recorded } = prepared.together;
  await ctx.db.execute(statement.sql, statement.args, FIRST_VERSIONS);
  if (recorded) ctx.changes.committed();
  return resources.map((resource, index) => {
    const text = statement.texts[index];
    ctx.committed.written(resource, text);
    return { resource, text, created: true, changed: true };
  });
}

export async function prepareCreates(ctx: StoreContext, items: readonly NewResource[]): Promise<PreparedCreates> {
  const inputs: Resource[] = [];
  for (const [index, item] of items.entries()) {
    try {
      assertType(item.resourceType);
      ctx.validate(item.input, item.resourceType);
      inputs.push(await ctx.completeAndCheck(ctx.db, item.input, ctx.identity.projectId));
    } catch (error) {
      throw new ItemError(index, error);
    }
  }
  const writes = inputs.map((input) => ({ input, existing: undefined }));
  const decided = ctx.writeCheck?.prepare ? await ctx.writeCheck.prepare(ctx.db, writes) : inputs;
  const resources = decided.map((input, index) => ctx.stamp(input, items[index].id ?? newId(), newId()));
  if (resources.some((resource) => writeHookOf(resource.resourceType) !== undefined || ctx.checksWrites(resource.resourceType))) {
    return { items };
  }
  let log: ChangeLog | undefined;
  const changes: Change[] = [];
  for (const resource of resources) {
    const recording = await ctx.changes.logFor(ctx.db, ctx.identity.projectId, resource.resourceType);
    if (!recording) continue;
    log = recording;
    changes.push(creationOf(resource));
  }
  const statement = await firstVersionsStatement(ctx.db, resources, { recorded: log && { log, changes } });
  return { items, together: { resources, statement, recorded: changes.length > 0 } };
}

async function createEach(ctx: StoreContext, items: readonly NewResource[]): Promise<WriteResult[]> {
  const results: WriteResult[] = [];
  for (const [index, item] of items.entries()) {
    try {
      results.push(await createResource(ctx, item.resourceType, item.input, item.id ?? newId()));
    } catch (error) {
      throw new ItemError(index, error);
    }
  }
  return results;
}

/**
 * Stores Binary bytes and a Binary resource describing them; the bytes are not in the JSON. Under a
 * write check (AccessPolicy criteria on Binary) bytes and resource are written in one transaction
 * with the check, as any create is: a Binary the writer could not read back is refused, not stored.
 * Without one, no transaction of its own: the bytes join the caller's, if any.
 */
export async function createBinary(ctx: StoreContext, contentType: string, data: Uint8Array, extra: Partial<Resource>, id: string): Promise<WriteResult> {
  const input: Resource = { ...extra, resourceType: 'Binary', contentType };
  ctx.validate(input);
  const resource = ctx.stamp(await ctx.prepared(ctx.db, input, undefined), id, newId());
  const written = { resource, contentType, data };
  let recorded = false;
  const text = !ctx.checksWrites('Binary')
    ? await writeBinary(ctx, ctx.db, ctx.db.joined, written)
    : await ctx.db.transaction(async (tx) => {
        const inserted = await writeBinary(ctx, tx, tx, written);
        recorded = await ctx.afterWrite(tx, resource, 'create');
        return inserted;
      });
  ctx.committed.written(resource, text);
  if (recorded) ctx.changes.committed();
  return { resource, text, created: true, changed: true };
}

/** A new Binary's bytes (joining `within`, when given) and then its first version, through `db`; the stored text. */
async function writeBinary(ctx: StoreContext, db: SqlExecutor, within: SqlExecutor | undefined, written: { resource: Resource; contentType: string; data: Uint8Array }): Promise<string> {
  const { resource, contentType, data } = written;
  const projectId = ctx.identity.projectId;
  await ctx.binaries.put(binaryKey(projectId, resource.id!, resource.meta!.versionId!), projectId, contentType, data, within);
  return insertNewResource(db, resource);
}

/**
 * Resources the server builds itself (the AuditEvents of subscription deliveries): trusted, so
 * neither validated nor checked nor given to a write check, and not cached (nobody reads them
 * soon); all of them in one statement, with the index rows of the `indexed` parameter codes
 * only (what their readers search by). Never recorded in the change log.
 */
export async function insertServerBuilt(ctx: StoreContext, resources: readonly Resource[], indexed: ReadonlySet<string>): Promise<void> {
  if (resources.length === 0) return;
  const stamped = resources.map((resource) => ctx.stamp(resource, newId(), newId()));
  await insertFirstVersions(ctx.db, stamped, { indexed });
  for (const resource of stamped) ctx.committed.announced(resource.resourceType, ctx.identity.projectId, resource.id!);
}

/** A create outside any transaction: with others that arrive at the same time when the server groups them. */
async function insertAlone(ctx: StoreContext, resource: Resource, log: ChangeLog | undefined): Promise<string> {
  if (!ctx.batches || ctx.db.joined) return insertNewResource(ctx.db, resource, log);
  const text = await ctx.batches.insert(resource, log);
  await ctx.db.noteWrite?.();
  return text;
}
