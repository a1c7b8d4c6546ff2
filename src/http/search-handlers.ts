import { errors } from '../fhir/outcome.js';
import { applySubsetting } from '../fhir/summary.js';
import type { BundleLink, Resource } from '../fhir/types.js';
import { search, searchServicesFor, type Paging, type SearchResult, type SearchRow } from '../search/service.js';
import type { HonoContext } from './fhir-handlers.js';
import { assertJsonAcceptable } from './negotiation.js';
import { fhirText } from './responses.js';

/**
 * REST search: `GET /{type}?...`, `POST /{type}/_search` (form body, merged with the query
 * string) and the system search `GET /?_type=A,B&...`. The handlers decode the request, call the
 * search service and encode the searchset Bundle.
 */

/** The Bundle tag that says whether `Bundle.total` is a count or the planner's estimate. */
export const TOTAL_ACCURACY_SYSTEM = 'https://flint.dev/fhir/CodeSystem/search-total';

export async function searchTypeHandler(c: HonoContext): Promise<Response> {
  const type = c.req.param('type') as string;
  const params = [...new URL(c.req.url).searchParams.entries()];
  return respond(c, [type], params, `${type}`);
}

export async function searchPostHandler(c: HonoContext): Promise<Response> {
  const type = c.req.param('type') as string;
  const contentType = (c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (contentType !== 'application/x-www-form-urlencoded' && contentType !== '') {
    throw errors.unsupportedMediaType(`POST ${type}/_search takes a form body (application/x-www-form-urlencoded), not ${contentType}`);
  }
  const body = await c.req.text();
  const params = [...new URL(c.req.url).searchParams.entries(), ...new URLSearchParams(body).entries()];
  return respond(c, [type], params, `${type}`);
}

export async function searchSystemHandler(c: HonoContext): Promise<Response> {
  const params = [...new URL(c.req.url).searchParams.entries()];
  const typeValues = params.filter(([name]) => name === '_type').flatMap(([, value]) => value.split(','));
  const types = typeValues.map((t) => t.trim()).filter((t) => t !== '');
  return respond(c, types.length > 0 ? types : undefined, params, '');
}

async function respond(c: HonoContext, types: string[] | undefined, params: [string, string][], path: string): Promise<Response> {
  const ctx = c.get('ctx');
  assertJsonAcceptable(c.req.query('_format') ?? null, c.req.header('accept') ?? null);
  const lenient = /(^|[;,\s])handling\s*=\s*lenient\b/i.test(c.req.header('prefer') ?? '');
  if (types) {
    for (const type of types) {
      if (!/^[A-Z][A-Za-z]+$/.test(type)) throw errors.invalid(`Unknown resource type "${type}" in _type`, '_type');
    }
  }
  const result = await search(searchServicesFor(ctx), types, params, { lenient });
  const base = path === '' ? ctx.config.fhirBaseUrl : `${ctx.config.fhirBaseUrl}/${path}`;
  const text = bundleText(ctx.config.fhirBaseUrl, base, result);
  return fhirText(text, 200, {}, c.req.query('_pretty') === 'true');
}

/**
 * The searchset Bundle as text: stored resources are spliced in as stored (no parse and
 * re-serialise) unless `_summary`/`_elements` ask for a subset.
 */
export function bundleText(fhirBase: string, searchBase: string, result: SearchResult): string {
  const head: Record<string, unknown> = { resourceType: 'Bundle', type: 'searchset' };
  if (result.total) {
    head.meta = { tag: [{ system: TOTAL_ACCURACY_SYSTEM, code: result.total.exact ? 'exact' : 'estimate' }] };
    head.total = result.total.value;
  }
  head.link = links(searchBase, result.paging);
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

function links(base: string, paging: Paging): BundleLink[] {
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
