import type { Identity } from '../identity/identity.js';
import type { Resource } from '../fhir/types.js';
import type { BinaryStream } from './binary-storage.js';
import type { NewResource, PreparedCreates, ResourceRepository, WriteCheck, HistoryOptions, HistoryPage, ReadKey, StoredVersion, VersionKey, WriteOptions, WriteResult } from './types.js';
import { parseStored } from './versions.js';
import { StoreContext, type StorageServices } from './store-context.js';
import * as reads from './resource-reads.js';
import * as creates from './resource-creates.js';
import * as updates from './resource-updates.js';
import { newId } from './ids.js';

export type { StorageServices } from './store-context.js';

/**
 * The resource store of one caller (see StorageServices). Its parts: reads
 * (resource-reads.ts), creates (resource-creates.ts), and writes of existing resources
 * (resource-updates.ts), over what they share (store-context.ts).
 */
export class Repository implements ResourceRepository {
  private readonly ctx: StoreContext;

  constructor(
    services: StorageServices,
    identity: Identity,
    /** Checked inside every write's transaction of the types it applies to (access policy criteria). */
    writeCheck?: WriteCheck,
  ) {
    this.ctx = new StoreContext(services, identity, writeCheck);
  }

  /**
   * Whether this server keeps recently used versions in memory (the embedded database): a caller
   * that finds resources by a search can then get their text from memory (readVersionTexts).
   */
  get cachesVersions(): boolean {
    return this.ctx.cache.enabled;
  }

  readVersion(resourceType: string, id: string, from: 'reader' | 'primary' = 'reader'): Promise<StoredVersion> {
    return reads.readVersion(this.ctx, resourceType, id, from);
  }

  readVersions(keys: readonly ReadKey[]): Promise<Map<string, StoredVersion>> {
    return reads.readVersions(this.ctx, keys);
  }

  readVersionTexts(versions: readonly VersionKey[]): Promise<Map<string, string>> {
    return reads.readVersionTexts(this.ctx, versions);
  }

  async readResource(resourceType: string, id: string): Promise<Resource> {
    return parseStored(await this.readVersion(resourceType, id));
  }

  readHistoryVersion(resourceType: string, id: string, versionId: string, from: 'reader' | 'primary' = 'reader'): Promise<StoredVersion> {
    return reads.readVersionOf(this.ctx, resourceType, id, versionId, from);
  }

  history(resourceType: string | undefined, id: string | undefined, options: HistoryOptions): Promise<HistoryPage> {
    return reads.history(this.ctx, resourceType, id, options);
  }

  readBinaryData(version: StoredVersion): Promise<Uint8Array | undefined> {
    return reads.readBinaryData(this.ctx, version);
  }

  readBinaryStream(version: StoredVersion): Promise<BinaryStream | undefined> {
    return reads.readBinaryStream(this.ctx, version);
  }

  createResource(resourceType: string, input: unknown, id: string = newId()): Promise<WriteResult> {
    return creates.createResource(this.ctx, resourceType, input, id);
  }

  createResources(input: readonly NewResource[] | PreparedCreates): Promise<WriteResult[]> {
    return creates.createResources(this.ctx, input);
  }

  prepareCreates(items: readonly NewResource[]): Promise<PreparedCreates> {
    return creates.prepareCreates(this.ctx, items);
  }

  createBinary(contentType: string, data: Uint8Array, extra: Partial<Resource> = {}, id: string = newId()): Promise<WriteResult> {
    return creates.createBinary(this.ctx, contentType, data, extra, id);
  }

  insertServerBuilt(resources: readonly Resource[], indexed: ReadonlySet<string>): Promise<void> {
    return creates.insertServerBuilt(this.ctx, resources, indexed);
  }

  updateResource(resourceType: string, id: string, input: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return updates.update(this.ctx, resourceType, id, input, options, newId(), false);
  }

  updateBinary(id: string, contentType: string, data: Uint8Array, options: WriteOptions = {}, extra: Partial<Resource> = {}): Promise<WriteResult> {
    return updates.updateBinary(this.ctx, id, contentType, data, options, extra);
  }

  patchResource(resourceType: string, id: string, operations: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return updates.patchResource(this.ctx, resourceType, id, operations, options);
  }

  deleteResource(resourceType: string, id: string, options: WriteOptions = {}): Promise<void> {
    return updates.deleteResource(this.ctx, resourceType, id, options);
  }

  expungeResource(resourceType: string, id: string): Promise<void> {
    return updates.expungeResource(this.ctx, resourceType, id);
  }
}
