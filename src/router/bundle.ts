import type { StoredVersion } from '../storage/types.js';
import type { Bundle, BundleEntry, BundleLink, Resource } from '../fhir/types.js';

/** A `history` Bundle, newest first; deletes are entries with `request.method` DELETE and no resource. */
export function historyBundle(
  fhirBase: string,
  versions: (StoredVersion & { first: boolean })[],
  links: BundleLink[],
): Bundle {
  return {
    resourceType: 'Bundle',
    type: 'history',
    link: links,
    entry: versions.map((version) => historyEntry(fhirBase, version)),
  };
}

function historyEntry(fhirBase: string, version: StoredVersion & { first: boolean }): BundleEntry {
  const url = `${version.resourceType}/${version.id}`;
  const response = {
    etag: `W/"${version.versionId}"`,
    lastModified: version.lastUpdated,
  };
  if (version.deleted) {
    return {
      fullUrl: `${fhirBase}/${url}`,
      request: { method: 'DELETE', url },
      response: { status: '204 No Content', ...response },
    };
  }
  return {
    fullUrl: `${fhirBase}/${url}`,
    resource: JSON.parse(version.text ?? 'null') as Resource,
    request: version.first ? { method: 'POST', url: version.resourceType } : { method: 'PUT', url },
    response: { status: version.first ? '201 Created' : '200 OK', ...response },
  };
}

/** Page links for offset paging: `self`, `first`, `previous` and `next` where they apply. */
export function offsetLinks(baseUrl: string, params: URLSearchParams, offset: number, count: number, hasMore: boolean): BundleLink[] {
  const at = (newOffset: number): string => {
    const copy = new URLSearchParams(params);
    copy.set('_count', String(count));
    copy.set('_offset', String(newOffset));
    return `${baseUrl}?${copy.toString()}`;
  };
  const links: BundleLink[] = [
    { relation: 'self', url: at(offset) },
    { relation: 'first', url: at(0) },
  ];
  if (offset > 0) links.push({ relation: 'previous', url: at(Math.max(0, offset - count)) });
  if (hasMore) links.push({ relation: 'next', url: at(offset + count) });
  return links;
}
