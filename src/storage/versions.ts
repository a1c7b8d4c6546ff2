import { toInstant } from '../db/database.js';
import { ANY_VERSION } from '../fhir/etag.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import type { StoredVersion } from './types.js';

/** Equal apart from the server-owned meta fields: such an update writes no new version. */
export function sameContent(current: Resource, next: Resource): boolean {
  return canonical(current) === canonical(next);
}

function canonical(resource: Resource): string {
  const { meta, ...rest } = resource;
  const { versionId: _v, lastUpdated: _l, project: _p, ...otherMeta } = meta ?? {};
  return stableStringify(Object.keys(otherMeta).length > 0 ? { ...rest, meta: otherMeta } : rest);
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

/** A version row as the read statements select it (`lastUpdated` as the driver returns it). */
export interface VersionRow {
  projectId: string;
  id: string;
  versionId: string;
  lastUpdated: unknown;
  deleted: boolean;
  content: string | null;
}

export function toStoredVersion(resourceType: string, row: VersionRow): StoredVersion {
  return {
    resourceType,
    projectId: row.projectId,
    id: row.id,
    versionId: row.versionId,
    lastUpdated: toInstant(row.lastUpdated),
    deleted: row.deleted,
    text: row.content,
  };
}

export function parseStored(version: StoredVersion): Resource {
  return JSON.parse(version.text ?? 'null') as Resource;
}

/** If-Match: the version the client last read must still be the current one (412 otherwise). */
export function checkVersion(current: { versionId: string }, options: { ifMatch?: string }, resourceType: string, id: string): void {
  if (options.ifMatch !== undefined && options.ifMatch !== ANY_VERSION && options.ifMatch !== current.versionId) {
    throw errors.preconditionFailed(
      `${resourceType}/${id} is at version ${current.versionId}, not ${options.ifMatch}: read it again and retry`,
    );
  }
}

/**
 * Now, or a millisecond after the current version when that is not earlier (a version written
 * within the same millisecond, or a clock set back): a resource's versions stay in the order they
 * were written, which history lists newest first by lastUpdated.
 */
export function nextInstant(previous: { lastUpdated: string } | undefined): string {
  const now = Date.now();
  const after = previous ? Date.parse(previous.lastUpdated) + 1 : now;
  return new Date(Math.max(now, after)).toISOString();
}
