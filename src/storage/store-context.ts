import type { Config } from '../config.js';
import type { Identity } from '../identity/identity.js';
import type { TransactionalSql, SqlExecutor } from '../db/database.js';
import type { Reader } from '../db/replicas.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { assertResourceChecks } from '../validation/resource-checks.js';
import { prepareResource } from '../validation/resource-preparers.js';
import { validateResource } from '../validation/validator.js';
import type { PatchLimits } from './patch.js';
import { idInUse, lockCurrentRow, type CurrentRow } from './current-rows.js';
import type { BinaryStorage } from './binary-storage.js';
import { commitOnly, type ResourceCache } from './resource-cache.js';
import type { CreateBatches } from './create-batches.js';
import type { Change, ChangeLog } from './change-log.js';
import { ChangeRecorder } from './change-recorder.js';
import { CommittedWrites } from './committed-writes.js';
import type { InvalidationBus } from '../cache/invalidation.js';
import type { SearchCache } from '../cache/search-cache.js';
import type { StoredVersion, WriteCheck } from './types.js';
import { writeHookOf } from './write-hooks.js';
import { nextInstant } from './versions.js';
import { canSee } from './project-scope.js';

/**
 * The resource store of one caller: every statement is scoped to the caller's project (or all
 * projects for a super admin). Writes of a resource, its history row and its index rows are atomic.
 */
export interface StorageServices {
  /**
   * The body limit also bounds what a JSON Patch makes (src/storage/patch.ts); references by
   * absolute URL to the FHIR base are checked as relative ones (src/validation/reference-text.ts).
   */
  readonly config: Pick<Config, 'maxBodyBytes' | 'maxPatchOperations' | 'fhirBaseUrl'>;
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

/**
 * What the repository's reads, creates and updates share: one caller's view of the store and the
 * steps every write takes (completion and checks, server-owned fields, what follows the write in
 * its transaction). One per Repository.
 */
export class StoreContext {
  readonly db: TransactionalSql;
  readonly reader: () => Reader;
  readonly binaries: BinaryStorage;
  readonly cache: ResourceCache;
  readonly batches: CreateBatches | undefined;
  // Made on first use: most stores serve one read and never write.
  private committedWrites?: CommittedWrites;
  private changeRecorder?: ChangeRecorder;

  constructor(
    private readonly services: StorageServices,
    readonly identity: Identity,
    /** Checked inside every write's transaction of the types it applies to (access policy criteria). */
    readonly writeCheck?: WriteCheck,
  ) {
    this.db = services.db;
    const onDb: Reader = { db: services.db, replica: false };
    this.reader = services.reader ?? (() => onDb);
    this.binaries = services.binaryStorage;
    // Inside a joined transaction the cache may hold versions the transaction has replaced, and
    // must not learn versions before they commit.
    this.cache = services.db.joined ? commitOnly(services.resourceCache) : services.resourceCache;
    this.batches = services.createBatches;
  }

  get committed(): CommittedWrites {
    return (this.committedWrites ??= new CommittedWrites(this.services.db, this.cache, this.services.bus, this.services.searchCache));
  }

  get changes(): ChangeRecorder {
    return (this.changeRecorder ??= new ChangeRecorder(this.db, this.services.changeLog));
  }

  get patchLimits(): PatchLimits {
    return { maxOperations: this.services.config.maxPatchOperations, maxBytes: this.services.config.maxBodyBytes };
  }

  /** Throws 400 when the input is not a valid resource (of `expectedType`, when given). */
  validate(input: unknown, expectedType?: string): asserts input is Resource {
    validateResource(input, { expectedType, fhirBase: this.services.config.fhirBaseUrl });
  }

  canSee(projectId: string): boolean {
    return canSee(this.identity, projectId);
  }

  checksWrites(resourceType: string): boolean {
    return this.writeCheck?.appliesTo(resourceType) === true;
  }

  /**
   * The resource completed by its type's preparer (a StructureDefinition's snapshot), then the
   * checks beyond shape (bindings by terminology, profiles): both registered by the composition root.
   */
  async completeAndCheck(db: SqlExecutor, input: Resource, projectId: string): Promise<Resource> {
    const completed = await prepareResource(input, { db, projectId });
    await assertResourceChecks(completed, { db, projectId });
    return completed;
  }

  /** The content to store, as the write check's `prepare` decides (unchanged without one). */
  async prepared(db: SqlExecutor, input: Resource, existing: Resource | undefined): Promise<Resource> {
    return this.writeCheck?.prepare ? (await this.writeCheck.prepare(db, [{ input, existing }]))[0] : input;
  }

  /** Server-owned fields: id, meta.versionId, meta.lastUpdated (after `previous`'s), meta.project. */
  stamp(input: Resource, id: string, versionId: string, projectId = this.identity.projectId, previous?: CurrentRow): Resource {
    const { resourceType, id: _ignored, meta, ...rest } = input;
    return {
      resourceType,
      id,
      meta: { ...meta, versionId, lastUpdated: nextInstant(previous), project: projectId },
      ...rest,
    };
  }

  /**
   * Checks the written version, runs the write hook of its type, then records the change in the
   * change log, inside the write's transaction. Whether it recorded it: the caller tells the log
   * once the transaction committed (ChangeRecorder.committed).
   */
  async afterWrite(tx: SqlExecutor, resource: Resource | null, interaction: Change['interaction'], deleted?: StoredVersion): Promise<boolean> {
    if (resource && this.checksWrites(resource.resourceType)) await this.writeCheck!.verify(tx, resource);
    const key = deleted
      ? { resourceType: deleted.resourceType, id: deleted.id, projectId: deleted.projectId }
      : { resourceType: resource!.resourceType, id: resource!.id!, projectId: resource!.meta!.project! };
    const hook = writeHookOf(key.resourceType);
    if (hook) await hook(tx, { ...key, resource });
    return this.changes.record(tx, { ...key, versionId: deleted?.versionId ?? resource!.meta!.versionId!, interaction });
  }

  /** Locks the current row for the rest of the transaction so concurrent writers queue. */
  async lockCurrent(tx: SqlExecutor, resourceType: string, id: string, purpose: 'update' | 'change' = 'change'): Promise<CurrentRow | undefined> {
    const row = await lockCurrentRow(tx, resourceType, id);
    if (row && !this.canSee(row.projectId)) {
      // Ids are global: one taken in a project the caller cannot see is never overwritten. Only an
      // update-as-create must say the id is unusable; everything else sees no resource at all.
      if (purpose === 'update') throw idInUse(resourceType, id);
      return undefined;
    }
    return row;
  }
}

export function assertType(resourceType: string): void {
  if (!isResourceType(resourceType)) {
    throw errors.notSupported(`Unknown resource type "${resourceType}"`);
  }
}
