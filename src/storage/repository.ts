import { ID_PATTERN } from '../fhir/ids.js';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { Identity } from '../identity/identity.js';
import type { SqlExecutor, TransactionalSql } from '../db/database.js';
import type { Reader } from '../db/replicas.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { validateResource } from '../validation/validator.js';
import { assertResourceChecks } from '../validation/resource-checks.js';
import { prepareResource } from '../validation/resource-preparers.js';
import { applyJsonPatch, type PatchLimits } from './patch.js';
import { idInUse, lockCurrentRow, projectOf, retryOnCreateRace, type CurrentRow } from './current-rows.js';
import type { InvalidationBus } from '../cache/invalidation.js';
import { firstVersionsStatement, insertFirstVersions, replaceVersion, writeDeletion } from './sql.js';
import { binaryKey, type BinaryStorage, type BinaryStream } from './binary-storage.js';
import { commitOnly, type ResourceCache } from './resource-cache.js';
import type { SearchCache } from '../cache/search-cache.js';
import { ItemError, isPrepared, keyOf, type NewResource, type PreparedCreates, type ResourceRepository, type WriteCheck, type HistoryOptions, type HistoryPage, type ReadKey, type StoredVersion, type VersionKey, type WriteOptions, type WriteResult } from './types.js';
import { writeHookOf } from './write-hooks.js';
import { creationOf, type Change, type ChangeLog } from './change-log.js';
import { ChangeRecorder } from './change-recorder.js';
import { CommittedWrites } from './committed-writes.js';
import { expungeRows, lockForExpunge } from './expunge.js';
import { insertNewResource, type CreateBatches } from './create-batches.js';
import { readHistoryPage, readHistoryVersion } from './history.js';
import { selectCurrent, selectCurrentMany, selectVersionTexts } from './current-versions.js';
import { checkVersion, isUuid, nextInstant, parseStored, sameContent } from './versions.js';
import { canSee } from './project-scope.js';


/**
 * The resource store of one caller: every statement is scoped to the caller's project (or all
 * projects for a super admin). Writes of a resource, its history row and its index rows are atomic.
 */
export interface StorageServices {
  /** The body limit also bounds what a JSON Patch makes (src/storage/patch.ts). */
  readonly config: Pick<Config, 'maxBodyBytes' | 'maxPatchOperations'>;
  /** The database, or a transaction that the writes join (a transaction Bundle). */
  readonly db: TransactionalSql;
  /** Where reads, history and the checks before them go (a read replica); absent: `db`. */
  readonly reader?: () => Reader;
  readonly binaryStorage: BinaryStorage;
  readonly resourceCache: ResourceCache;
  /** Tells every server's caches about committed writes of the types they watch (absent: nobody watches). */
  readonly bus?: InvalidationBus;
  /** Exact search counts, voided by every committed write (src/cache/search-cache.ts). */
  readonly searchCache?: SearchCache;
  /** Group commit of plain creates on the primary (absent: each create alone). */
  readonly createBatches?: CreateBatches;
  /** Records every write in its transaction for what follows commits (subscriptions); absent: nothing is recorded. */
  readonly changeLog?: ChangeLog;
}

export class Repository implements ResourceRepository {
  private readonly db: TransactionalSql;
  private readonly reader: () => Reader;
  private readonly binaries: BinaryStorage;
  private readonly cache: ResourceCache;
  private readonly committed: CommittedWrites;
  private readonly patchLimits: PatchLimits;
  private readonly batches: CreateBatches | undefined;
  private readonly changes: ChangeRecorder;

  constructor(
    services: StorageServices,
    private readonly identity: Identity,
    /** Checked inside every write's transaction of the types it applies to (access policy criteria). */
    private readonly writeCheck?: WriteCheck,
  ) {
    this.db = services.db;
    const onDb: Reader = { db: services.db, replica: false };
    this.reader = services.reader ?? (() => onDb);
    this.binaries = services.binaryStorage;
    // Inside a joined transaction the cache may hold versions the transaction has replaced, and
    // must not learn versions before they commit.
    this.cache = services.db.joined ? commitOnly(services.resourceCache) : services.resourceCache;
    this.committed = new CommittedWrites(services.db, this.cache, services.bus, services.searchCache);
    this.batches = services.createBatches;
    this.changes = new ChangeRecorder(this.db, services.changeLog);
    this.patchLimits = { maxOperations: services.config.maxPatchOperations, maxBytes: services.config.maxBodyBytes };
  }

  /**
   * Whether this server keeps recently used versions in memory (the embedded database): a caller
   * that finds resources by a search can then get their text from memory (readVersionTexts).
   */
  get cachesVersions(): boolean {
    return this.cache.enabled;
  }

  /** Reads the current version as stored text (the read hot path: no parse, no re-serialise). */
  async readVersion(resourceType: string, id: string, from: 'reader' | 'primary' = 'reader'): Promise<StoredVersion> {
    assertType(resourceType);
    if (!ID_PATTERN.test(id)) throw errors.notFound(`${resourceType}/${id} not found`);
    const version = this.cache.get(resourceType, id) ?? (await this.loadCurrent(resourceType, id, from === 'primary' ? { db: this.db, replica: false } : this.reader()));
    if (!version || !this.canSee(version.projectId)) throw errors.notFound(`${resourceType}/${id} not found`);
    if (version.deleted) throw errors.gone(`${resourceType}/${id} was deleted`);
    return version;
  }

  /** A replica's version may be older than one this server has cached or will learn: it never fills the cache. */
  private async loadCurrent(resourceType: string, id: string, reader: Reader): Promise<StoredVersion | undefined> {
    const version = await selectCurrent(reader.db, resourceType, id);
    if (version && !reader.replica) this.cache.fill(version);
    return version;
  }

  /**
   * Current versions of many resources at once, for batched reference loads (GraphQL's
   * `Reference.resource`): cached versions from the cache, the rest in one statement. Unlike
   * readVersion it never throws for a single key: a key of an unknown type, a malformed id, a
   * missing or deleted resource, or one of a project the caller cannot see is simply absent from
   * the result (keyed `Type/id`). A key's `heldVersionId` spares loading a text the caller holds.
   */
  async readVersions(keys: readonly ReadKey[]): Promise<Map<string, StoredVersion>> {
    const found = new Map<string, StoredVersion>();
    const reader = this.reader();
    const cache = this.cache.enabled ? this.cache : undefined;
    // Keys are expected once each (a key given twice is read twice): cheaper than a map of keys.
    const missing: ReadKey[] = [];
    for (const key of keys) {
      if (!isResourceType(key.resourceType) || !ID_PATTERN.test(key.id)) continue;
      const cached = cache?.get(key.resourceType, key.id);
      if (cached) {
        if (!cached.deleted && this.canSee(cached.projectId)) found.set(keyOf(key), cached);
      } else missing.push(key);
    }
    if (missing.length > 0) {
      for (const version of await selectCurrentMany(reader.db, missing)) {
        // A held version came without its text: nothing to cache.
        if (cache && !reader.replica && (version.text !== null || version.deleted)) cache.fill(version);
        if (!version.deleted && this.canSee(version.projectId)) found.set(keyOf(version), version);
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
  async readVersionTexts(versions: readonly VersionKey[]): Promise<Map<string, string>> {
    const texts = new Map<string, string>();
    const missing: string[] = [];
    for (const version of versions) {
      const cached = this.cache.get(version.resourceType, version.id);
      if (cached?.versionId === version.versionId && cached.text !== null && this.canSee(cached.projectId)) texts.set(version.versionId, cached.text);
      else if (isUuid(version.versionId)) missing.push(version.versionId);
    }
    if (missing.length === 0) return texts;
    for (const [versionId, text] of await selectVersionTexts(this.reader().db, this.identity, missing)) texts.set(versionId, text);
    return texts;
  }

  async readResource(resourceType: string, id: string): Promise<Resource> {
    return parseStored(await this.readVersion(resourceType, id));
  }

  readHistoryVersion(resourceType: string, id: string, versionId: string): Promise<StoredVersion> {
    assertType(resourceType);
    return readHistoryVersion(this.reader().db, this.identity, resourceType, id, versionId);
  }

  async createResource(resourceType: string, input: unknown, id: string = randomUUID()): Promise<WriteResult> {
    assertType(resourceType);
    validateResource(input, { expectedType: resourceType });
    const completed = await this.completeAndCheck(this.db, input, this.identity.projectId);
    const resource = this.stamp(await this.prepared(this.db, completed, undefined), id, randomUUID());
    const inTransaction = writeHookOf(resourceType) !== undefined || this.checksWrites(resourceType);
    let recorded = false;
    let text: string;
    if (inTransaction) {
      text = await this.db.transaction(async (tx) => {
        const written = await this.insertNew(tx, resource);
        recorded = await this.afterWrite(tx, resource, 'create');
        return written;
      });
    } else {
      // Recorded by the create's own statement, which can then be grouped with others.
      const log = await this.changes.logFor(this.db, this.identity.projectId, resourceType);
      text = await this.insertAlone(resource, log);
      recorded = log !== undefined;
    }
    this.committed.written(resource, text);
    if (recorded) this.changes.committed();
    return { resource, text, created: true, changed: true };
  }

  /**
   * Creates many resources, each with its given id: one statement for all of them (resource,
   * history and index rows, and their changes when the change log records them) when no write
   * check or hook applies to their types, else one create each. A resource that fails validation is an ItemError naming its place in `items`.
   */
  async createResources(input: readonly NewResource[] | PreparedCreates): Promise<WriteResult[]> {
    const prepared = isPrepared(input) ? input : await this.prepareCreates(input);
    if (!prepared.together) return this.createEach(prepared.items);
    const { resources, statement, recorded } = prepared.together;
    await this.db.execute(statement.sql, statement.args, { planOnce: true });
    if (recorded) this.changes.committed();
    return resources.map((resource) => {
      const text = JSON.stringify(resource);
      this.committed.written(resource, text);
      return { resource, text, created: true, changed: true };
    });
  }

  async prepareCreates(items: readonly NewResource[]): Promise<PreparedCreates> {
    const inputs: Resource[] = [];
    for (const [index, item] of items.entries()) {
      try {
        assertType(item.resourceType);
        validateResource(item.input, { expectedType: item.resourceType });
        inputs.push(await this.completeAndCheck(this.db, item.input, this.identity.projectId));
      } catch (error) {
        throw new ItemError(index, error);
      }
    }
    const writes = inputs.map((input) => ({ input, existing: undefined }));
    const decided = this.writeCheck?.prepare ? await this.writeCheck.prepare(this.db, writes) : inputs;
    const resources = decided.map((input, index) => this.stamp(input, items[index].id ?? randomUUID(), randomUUID()));
    if (resources.some((resource) => writeHookOf(resource.resourceType) !== undefined || this.checksWrites(resource.resourceType))) {
      return { items };
    }
    let log: ChangeLog | undefined;
    const changes: Change[] = [];
    for (const resource of resources) {
      const recording = await this.changes.logFor(this.db, this.identity.projectId, resource.resourceType);
      if (!recording) continue;
      log = recording;
      changes.push(creationOf(resource));
    }
    const statement = await firstVersionsStatement(this.db, resources, { recorded: log && { log, changes } });
    return { items, together: { resources, statement, recorded: changes.length > 0 } };
  }

  private async createEach(items: readonly NewResource[]): Promise<WriteResult[]> {
    const results: WriteResult[] = [];
    for (const [index, item] of items.entries()) {
      try {
        results.push(await this.createResource(item.resourceType, item.input, item.id));
      } catch (error) {
        throw new ItemError(index, error);
      }
    }
    return results;
  }

  /**
   * The resource completed by its type's preparer (a StructureDefinition's snapshot), then the
   * checks beyond shape (bindings by terminology, profiles): both registered by the composition root.
   */
  private async completeAndCheck(db: SqlExecutor, input: Resource, projectId: string): Promise<Resource> {
    const completed = await prepareResource(input, { db, projectId });
    await assertResourceChecks(completed, { db, projectId });
    return completed;
  }

  /** The content to store, as the write check's `prepare` decides (unchanged without one). */
  private async prepared(db: SqlExecutor, input: Resource, existing: Resource | undefined): Promise<Resource> {
    return this.writeCheck?.prepare ? (await this.writeCheck.prepare(db, [{ input, existing }]))[0] : input;
  }

  private checksWrites(resourceType: string): boolean {
    return this.writeCheck?.appliesTo(resourceType) === true;
  }

  /**
   * Checks the written version, runs the write hook of its type, then records the change in the
   * change log, inside the write's transaction. Whether it recorded it: the caller tells the log
   * once the transaction committed (ChangeRecorder.committed).
   */
  private async afterWrite(tx: SqlExecutor, resource: Resource | null, interaction: Change['interaction'], deleted?: StoredVersion): Promise<boolean> {
    if (resource && this.checksWrites(resource.resourceType)) await this.writeCheck!.verify(tx, resource);
    const key = deleted
      ? { resourceType: deleted.resourceType, id: deleted.id, projectId: deleted.projectId }
      : { resourceType: resource!.resourceType, id: resource!.id!, projectId: resource!.meta!.project! };
    const hook = writeHookOf(key.resourceType);
    if (hook) await hook(tx, { ...key, resource });
    return this.changes.record(tx, { ...key, versionId: deleted?.versionId ?? resource!.meta!.versionId!, interaction });
  }

  /** Update, or create with the client's id when it does not exist yet (update-as-create). */
  updateResource(resourceType: string, id: string, input: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return this.update(resourceType, id, input, options, randomUUID(), false);
  }

  /** Replaces a Binary's bytes (a raw PUT): always a new version, since the bytes are not in the JSON. */
  async updateBinary(id: string, contentType: string, data: Uint8Array, options: WriteOptions = {}): Promise<WriteResult> {
    const versionId = randomUUID();
    const input: Resource = { resourceType: 'Binary', id, contentType };
    validateResource(input);
    // Bytes first, under the new version's key: a failed write leaves unreferenced bytes, never a
    // version without its bytes.
    const projectId = await this.projectOfExisting('Binary', id);
    await this.binaries.put(binaryKey(projectId, id, versionId), projectId, contentType, data, this.db.joined);
    return this.update('Binary', id, input, options, versionId, true);
  }

  private async update(
    resourceType: string,
    id: string,
    input: unknown,
    options: WriteOptions,
    versionId: string,
    alwaysNewVersion: boolean,
  ): Promise<WriteResult> {
    assertType(resourceType);
    validateResource(input, { expectedType: resourceType });
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
      this.db.transaction(async (tx): Promise<WriteResult> => {
        const current = await this.lockCurrent(tx, resourceType, id, 'update');
        if (!current) {
          if (options.ifMatch !== undefined) {
            throw errors.preconditionFailed(`${resourceType}/${id} does not exist, so it cannot match version ${options.ifMatch}`);
          }
          const completed = await this.completeAndCheck(tx, input, this.identity.projectId);
          const resource = this.stamp(await this.prepared(tx, completed, undefined), id, versionId);
          const text = await this.insertNew(tx, resource);
          recorded = await this.afterWrite(tx, resource, 'create');
          return { resource, text, created: true, changed: true };
        }
        checkVersion(current, options, resourceType, id);
        const completed = await this.completeAndCheck(tx, input, current.projectId);
        const existing = !current.deleted && current.content !== null ? (JSON.parse(current.content) as Resource) : undefined;
        const next = await this.prepared(tx, completed, existing);
        if (!alwaysNewVersion && existing && sameContent(existing, next)) {
          return { resource: existing, text: current.content!, created: false, changed: false };
        }
        const resource = this.stamp(next, id, versionId, current.projectId, current);
        const text = await replaceVersion(tx, resource, current.projectId);
        recorded = await this.afterWrite(tx, resource, current.deleted ? 'create' : 'update');
        return { resource, text, created: current.deleted, changed: true };
      }),
    );
    if (result.changed) this.committed.written(result.resource, result.text);
    if (recorded) this.changes.committed();
    return result;
  }

  /** Applies a JSON Patch (RFC 6902) to the current version and stores the result as an update. */
  async patchResource(resourceType: string, id: string, operations: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    assertType(resourceType);
    let recorded = false;
    const result = await this.db.transaction(async (tx): Promise<WriteResult> => {
      const current = await this.lockCurrent(tx, resourceType, id);
      if (!current) throw errors.notFound(`${resourceType}/${id} not found`);
      if (current.deleted || current.content === null) throw errors.gone(`${resourceType}/${id} was deleted`);
      checkVersion(current, options, resourceType, id);
      const before = JSON.parse(current.content) as Resource;
      const patched = applyJsonPatch(before, operations, this.patchLimits);
      validateResource(patched, { expectedType: resourceType });
      if (patched.id !== id) throw errors.invalid('A patch must not change the resource id', `${resourceType}.id`);
      const completed = await this.completeAndCheck(tx, patched, current.projectId);
      const next = await this.prepared(tx, completed, before);
      if (sameContent(before, next)) return { resource: before, text: current.content, created: false, changed: false };
      const resource = this.stamp(next, id, randomUUID(), current.projectId, current);
      const text = await replaceVersion(tx, resource, current.projectId);
      recorded = await this.afterWrite(tx, resource, 'update');
      return { resource, text, created: false, changed: true };
    });
    if (result.changed) this.committed.written(result.resource, result.text);
    if (recorded) this.changes.committed();
    return result;
  }

  /** Deletes the resource: a new version marked deleted; reads give 410 afterwards. Idempotent. */
  async deleteResource(resourceType: string, id: string, options: WriteOptions = {}): Promise<void> {
    assertType(resourceType);
    let recorded = false;
    const deletion = await this.db.transaction(async (tx): Promise<StoredVersion | undefined> => {
      const current = await this.lockCurrent(tx, resourceType, id);
      if (!current) throw errors.notFound(`${resourceType}/${id} not found`);
      checkVersion(current, options, resourceType, id);
      if (current.deleted) return undefined;
      const version: StoredVersion = {
        resourceType,
        id,
        projectId: current.projectId,
        versionId: randomUUID(),
        lastUpdated: nextInstant(current),
        deleted: true,
        text: null,
      };
      await writeDeletion(tx, version);
      recorded = await this.afterWrite(tx, null, 'delete', version);
      return version;
    });
    if (deletion) this.committed.deleted(deletion);
    if (recorded) this.changes.committed();
  }

  /** Removes a resource of the caller's project (any project for a super admin) for good, history and bytes included. */
  async expungeResource(resourceType: string, id: string): Promise<void> {
    assertType(resourceType);
    const key = await this.db.transaction(async (tx) => {
      const found = await lockForExpunge(tx, resourceType, id);
      if (!found || !this.canSee(found.projectId)) throw errors.notFound(`${resourceType}/${id} not found`);
      await expungeRows(tx, this.binaries, [found]);
      return found;
    });
    this.committed.expunged([key]);
  }

  /** History of one resource (id given), a whole type, or every type (no type) in the caller's project, newest first. */
  async history(resourceType: string | undefined, id: string | undefined, options: HistoryOptions): Promise<HistoryPage> {
    if (resourceType !== undefined) assertType(resourceType);
    // One source for the check and the page: a replica could otherwise miss what the primary has.
    const reader = this.reader().db;
    if (resourceType !== undefined && id !== undefined) await this.assertExists(reader, resourceType, id);
    return readHistoryPage(reader, this.identity, resourceType, id, options);
  }

  /** Stores Binary bytes and a Binary resource describing them; the bytes are not in the JSON. */
  async createBinary(contentType: string, data: Uint8Array, extra: Partial<Resource> = {}, id: string = randomUUID()): Promise<WriteResult> {
    const input: Resource = { ...extra, resourceType: 'Binary', contentType };
    validateResource(input);
    const resource = this.stamp(input, id, randomUUID());
    await this.binaries.put(binaryKey(this.identity.projectId, resource.id!, resource.meta!.versionId!), this.identity.projectId, contentType, data, this.db.joined);
    const text = await this.insertNew(this.db, resource);
    this.committed.written(resource, text);
    return { resource, text, created: true, changed: true };
  }

  async readBinaryData(version: StoredVersion): Promise<Uint8Array | undefined> {
    if (!this.canSee(version.projectId)) return undefined;
    return (await this.binaries.get(binaryKey(version.projectId, version.id, version.versionId)))?.data;
  }

  async readBinaryStream(version: StoredVersion): Promise<BinaryStream | undefined> {
    if (!this.canSee(version.projectId)) return undefined;
    return this.binaries.getStream(binaryKey(version.projectId, version.id, version.versionId));
  }

  private canSee(projectId: string): boolean {
    return canSee(this.identity, projectId);
  }

  /** The project an existing resource belongs to, or the caller's project for a new id. */
  private async projectOfExisting(resourceType: string, id: string): Promise<string> {
    const projectId = await projectOf(this.db, resourceType, id);
    return projectId !== undefined && this.canSee(projectId) ? projectId : this.identity.projectId;
  }

  private async assertExists(reader: SqlExecutor, resourceType: string, id: string): Promise<void> {
    const projectId = await projectOf(reader, resourceType, id);
    if (projectId === undefined || !this.canSee(projectId)) throw errors.notFound(`${resourceType}/${id} not found`);
  }

  /** Locks the current row for the rest of the transaction so concurrent writers queue. */
  private async lockCurrent(
    tx: SqlExecutor,
    resourceType: string,
    id: string,
    purpose: 'update' | 'change' = 'change',
  ): Promise<CurrentRow | undefined> {
    const row = await lockCurrentRow(tx, resourceType, id);
    if (row && !this.canSee(row.projectId)) {
      // Ids are global: one taken in a project the caller cannot see is never overwritten. Only an
      // update-as-create must say the id is unusable; everything else sees no resource at all.
      if (purpose === 'update') throw idInUse(resourceType, id);
      return undefined;
    }
    return row;
  }

  /**
   * Resources the server builds itself (the AuditEvents of subscription deliveries): trusted, so
   * neither validated nor checked nor given to a write check, and not cached (nobody reads them
   * soon); all of them in one statement, with the index rows of the `indexed` parameter codes
   * only (what their readers search by). Never recorded in the change log.
   */
  async insertServerBuilt(resources: readonly Resource[], indexed: ReadonlySet<string>): Promise<void> {
    if (resources.length === 0) return;
    const stamped = resources.map((resource) => this.stamp(resource, randomUUID(), randomUUID()));
    await insertFirstVersions(this.db, stamped, { indexed });
    for (const resource of stamped) this.committed.announced(resource.resourceType, this.identity.projectId, resource.id!);
  }

  /** Server-owned fields: id, meta.versionId, meta.lastUpdated (after `previous`'s), meta.project. */
  private stamp(input: Resource, id: string, versionId: string, projectId = this.identity.projectId, previous?: CurrentRow): Resource {
    const { resourceType, id: _ignored, meta, ...rest } = input;
    return {
      resourceType,
      id,
      meta: { ...meta, versionId, lastUpdated: nextInstant(previous), project: projectId },
      ...rest,
    };
  }

  /** A create outside any transaction: with others that arrive at the same time when the server groups them. */
  private async insertAlone(resource: Resource, log: ChangeLog | undefined): Promise<string> {
    if (!this.batches || this.db.joined) return this.insertNew(this.db, resource, log);
    const text = await this.batches.insert(resource, log);
    await this.db.noteWrite?.();
    return text;
  }

  private insertNew(executor: SqlExecutor, resource: Resource, log?: ChangeLog): Promise<string> {
    return insertNewResource(executor, resource, log);
  }
}

function assertType(resourceType: string): void {
  if (!isResourceType(resourceType)) {
    throw errors.notSupported(`Unknown resource type "${resourceType}"`);
  }
}
