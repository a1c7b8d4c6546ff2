import type { SqlExecutor } from '../db/database.js';
import type { BinaryStream } from './binary-storage.js';
import type { Resource } from '../fhir/types.js';

/** A stored version: the JSON text exactly as stored, plus the columns clients see in headers. */
export interface StoredVersion {
  resourceType: string;
  projectId: string;
  id: string;
  versionId: string;
  lastUpdated: string;
  deleted: boolean;
  /**
   * The resource JSON as stored; null for a delete, and for a version the caller of readVersions
   * said it already holds (`ReadKey.heldVersionId`), whose text was not loaded.
   */
  text: string | null;
}

/** A resource by type and id, as references name it. */
export interface ResourceKey {
  resourceType: string;
  id: string;
}

/**
 * A key for readVersions. `heldVersionId`: the version of the resource the caller already holds
 * (parsed); when that is still the current version, its text is not loaded (`text` is null).
 */
export interface ReadKey extends ResourceKey {
  heldVersionId?: string;
}

/** An exact version of a resource, as a search returns it. */
export interface VersionKey extends ResourceKey {
  versionId: string;
}

/** `Type/id`: the key of readVersions' result. */
export function keyOf(key: ResourceKey): string {
  return `${key.resourceType}/${key.id}`;
}

export interface WriteOptions {
  /** Version the client expects to replace (If-Match); a different current version gives 412. */
  ifMatch?: string;
}

export interface WriteResult {
  resource: Resource;
  /** The resource as stored (JSON text). */
  text: string;
  /** True when the write created the resource (201), false when it updated one (200). */
  created: boolean;
  /** False when an update matched the current content and no version was written. */
  changed: boolean;
}

/** What a history page holds; versions come newest first, by ("lastUpdated", "versionId"). */
export interface HistoryOptions {
  count: number;
  /** Versions to skip (offset paging); 0 when absent. */
  offset?: number;
  /** `_since`: only versions written at or after this instant. */
  since?: string;
  /** `_at` (an instant): only the version of each resource current then, its newest at or before it (a deletion included). */
  at?: string;
  /** `nextCursor` of the previous page: the page starts after it, however deep (keyset paging). */
  cursor?: string;
  /** A super admin's system history narrowed to one project; ignored for anyone else, who sees only their own. */
  projectId?: string;
  /** Types left out (a system history under an AccessPolicy). */
  excludeTypes?: readonly string[];
}

export interface HistoryPage {
  versions: (StoredVersion & { first: boolean })[];
  hasMore: boolean;
  /** When hasMore: the cursor of the next page (HistoryOptions.cursor). */
  nextCursor?: string;
}

/**
 * Runs inside a write's transaction, after the version and its index rows are written and before
 * commit: throwing rolls the write back. Access control supplies one for AccessPolicy criteria.
 */
/** A write's content and the version it replaces (none for a new resource). */
export interface PreparedWrite {
  input: Resource;
  existing: Resource | undefined;
}

export interface WriteCheck {
  appliesTo(resourceType: string): boolean;
  verify(tx: SqlExecutor, resource: Resource): Promise<void>;
  /**
   * Decides what of writes' content the caller may not set itself (access control: who may set
   * `meta.accounts`), before each write is stamped and compared with the current version; one
   * call for many creates. `existing` is the current version (update, patch), undefined for a new
   * resource; `db` is where the writes' statements go (their transaction, when they have one).
   */
  prepare?(db: SqlExecutor, writes: readonly PreparedWrite[]): Promise<Resource[]>;
}

/**
 * The resource store as a request uses it. A request reaches it only through access control
 * (src/access/guarded-repository.ts), which implements each of these methods itself: a method
 * added here must be guarded there before the code compiles.
 */
export interface ResourceRepository {
  /** Whether recently used versions are kept in memory (readVersionTexts can then skip the database). */
  readonly cachesVersions: boolean;
  /** The current version as stored text (the read hot path: no parse, no re-serialise). */
  readVersion(resourceType: string, id: string): Promise<StoredVersion>;
  /** Current versions of many resources, keyed by `keyOf`; missing ones are left out. */
  readVersions(keys: readonly ReadKey[]): Promise<Map<string, StoredVersion>>;
  /** The stored texts of exact versions a search found, keyed by `keyOf`. */
  readVersionTexts(versions: readonly VersionKey[]): Promise<Map<string, string>>;
  readResource(resourceType: string, id: string): Promise<Resource>;
  readHistoryVersion(resourceType: string, id: string, versionId: string): Promise<StoredVersion>;
  /** History of a resource (type and id), a type (id undefined) or the whole system (both undefined), newest first. */
  history(resourceType: string | undefined, id: string | undefined, options: HistoryOptions): Promise<HistoryPage>;
  /** `id`: the id the new resource gets (a transaction assigns it before it rewrites references); a new UUID otherwise. */
  createResource(resourceType: string, input: unknown, id?: string): Promise<WriteResult>;
  /**
   * Creates many at once (a transaction's creates); a failure is an ItemError naming the item.
   * Given prepareCreates' result, writes what was prepared.
   */
  createResources(items: readonly NewResource[] | PreparedCreates): Promise<WriteResult[]>;
  /**
   * Validates, stamps and indexes creates without writing them, so that a transaction can do this
   * work before it opens and hold its connection only while it writes. A failure is an ItemError.
   */
  prepareCreates(items: readonly NewResource[]): Promise<PreparedCreates>;
  updateResource(resourceType: string, id: string, input: unknown, options?: WriteOptions): Promise<WriteResult>;
  patchResource(resourceType: string, id: string, operations: unknown, options?: WriteOptions): Promise<WriteResult>;
  deleteResource(resourceType: string, id: string, options?: WriteOptions): Promise<void>;
  /** Removes a resource for good: every version, its index rows and its bytes (404 when the caller cannot see it). */
  expungeResource(resourceType: string, id: string): Promise<void>;
  createBinary(contentType: string, data: Uint8Array, extra?: Partial<Resource>, id?: string): Promise<WriteResult>;
  /** New bytes as a new version; `extra` sets elements of it (securityContext: the current one is kept when not given). */
  updateBinary(id: string, contentType: string, data: Uint8Array, options?: WriteOptions, extra?: Partial<Resource>): Promise<WriteResult>;
  /** The bytes of a Binary version found by a read or a search (none for a project the caller cannot see). */
  readBinaryData(version: StoredVersion): Promise<Uint8Array | undefined>;
  /** The same bytes a chunk at a time, with their size: what an HTTP answer streams. */
  readBinaryStream(version: StoredVersion): Promise<BinaryStream | undefined>;
}

/** Creates made ready to write (prepareCreates). */
export interface PreparedCreates {
  readonly items: readonly NewResource[];
  /** The stamped resources and the one statement that writes them; absent when they are written one by one (write hooks, write checks). */
  readonly together?: {
    readonly resources: readonly Resource[];
    readonly statement: { readonly sql: string; readonly args: readonly unknown[]; readonly texts: readonly string[] };
    /** Whether the statement records changes in the change log (which then hears of the commit). */
    readonly recorded: boolean;
  };
}

export function isPrepared(input: readonly NewResource[] | PreparedCreates): input is PreparedCreates {
  return !Array.isArray(input);
}

/** One resource of a createResources call. */
export interface NewResource {
  resourceType: string;
  input: unknown;
  id?: string;
}

/** The failure of one item of a call that writes many: which one, and why. */
export class ItemError extends Error {
  constructor(
    readonly item: number,
    readonly reason: unknown,
  ) {
    super(reason instanceof Error ? reason.message : String(reason));
  }
}
