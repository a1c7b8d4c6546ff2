import { applySubsetting } from '../fhir/summary.js';
import type { BundleLink, Resource } from '../fhir/types.js';
import type { Paging, SearchResult, SearchRow } from '../search/service.js';

/** The Bundle tag that says whether `Bundle.total` is a count or the planner's estimate. */
export const TOTAL_ACCURACY_SYSTEM = 'https://flint.dev/fhir/CodeSystem/search-total';

/**
 * The searchset Bundle as text, with `links` (searchLinks): stored resources are spliced in as
 * stored (no parse and re-serialise) unless `_summary`/`_elements` ask for a subset.
 */
export function searchsetText(fhirBase: string, result: SearchResult, links: BundleLink[]): string {
  const head: Record<string, unknown> = { resourceType: 'Bundle', type: 'searchset' };
  if (result.total) {
    head.meta = { tag: [{ system: TOTAL_ACCURACY_SYSTEM, code: result.total.exact ? 'exact' : 'estimate' }] };
    head.total = result.total.value;
  }
  head.link = links;
  const entries: string[] = [];
  const entry = (row: SearchRow, mode: 'match' | 'include'): string => {
    const fullUrl = JSON.stringify(`${fhirBase}/${row.resourceType}/${row.id}`);
    const resource =
      result.summary === undefined && result.elements === undefined
        ? row.text
        : JSON.stringify(applySubsetting(JSON.parse(row.text) as Resource, result.summary, result.elements ?? null));
    return `{"fullUrl":${fullUrl},"resource":${resource},"search":{"mode":"${mode}"}}`;
  };
  for (const row of result.matches) entries.push(entry(row, 'match'));
  for (const row of result.includes) entries.push(entry(row, 'include'));
  if (result.warnings.length > 0) {
    entries.push(
      JSON.stringify({
        resource: { resourceType: 'OperationOutcome', issue: result.warnings },
        search: { mode: 'outcome' },
      }),
    );
  }
  const json = JSON.stringify(head);
  if (entries.length === 0 || result.summary === 'count') return json;
  return `${json.slice(0, -1)},"entry":[${entries.join(',')}]}`;
}

/** The links of a searchset page of the search at `base` (its `self`, `first`, `previous` and `next`). */
export function searchLinks(base: string, paging: Paging): BundleLink[] {
  const url = (extra: [string, string][]): string => {
    const query = new URLSearchParams([...paging.params, ['_count', String(paging.count)], ...extra]);
    return `${base}?${query.toString()}`;
  };
  const at = (position: { offset: number } | { cursor: string }): string =>
    'cursor' in position ? url([['_cursor', position.cursor]]) : url(position.offset > 0 ? [['_offset', String(position.offset)]] : []);
  const self = paging.cursor !== undefined ? url([['_cursor', paging.cursor]]) : url(paging.offset > 0 ? [['_offset', String(paging.offset)]] : []);
  const result: BundleLink[] = [
    { relation: 'self', url: self },
    { relation: 'first', url: url([]) },
  ];
  if (paging.previous) result.push({ relation: 'previous', url: at(paging.previous) });
  if (paging.next) result.push({ relation: 'next', url: at(paging.next) });
  return result;
}
