import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import { searchWithClientSecrets } from '../../access/client-secrets.js';
import { search, searchServicesFor } from '../../search/service.js';
import { searchLinks, searchsetText } from '../searchset.js';
import { textResponse } from '../responses.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';

/**
 * Search: `GET [type]?...`, `POST [type]/_search` (form body, merged with the query string) and the
 * system search `GET [base]?_type=A,B&...`. The handlers decode the request, call the search service
 * and encode the searchset Bundle.
 */

export async function searchTypeHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  return respond(req, ctx, [type!], [...req.query.entries()], type!);
}

export async function searchPostHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const contentType = (req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (contentType !== 'application/x-www-form-urlencoded' && contentType !== '') {
    throw errors.unsupportedMediaType(`POST ${type}/_search takes a form body (application/x-www-form-urlencoded), not ${contentType}`);
  }
  const body = req.body ? await req.body.text() : '';
  return respond(req, ctx, [type!], [...req.query.entries(), ...new URLSearchParams(body).entries()], type!);
}

export async function searchSystemHandler(req: FhirRequest, _params: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const params = [...req.query.entries()];
  const given = params.filter(([name]) => name === '_type');
  const types = given
    .flatMap(([, value]) => value.split(','))
    .map((t) => t.trim())
    .filter((t) => t !== '');
  // Read as absent, `_type=` searched every type: wider than any list the client could have meant.
  if (given.length > 0 && types.length === 0) throw errors.invalid('_type names no resource type: give one or more, e.g. _type=Patient,Observation', '_type');
  return respond(req, ctx, types.length > 0 ? types : undefined, params, '');
}

async function respond(req: FhirRequest, ctx: RequestContext, types: string[] | undefined, params: [string, string][], path: string): Promise<FhirResponse> {
  const lenient = /(^|[;,\s])handling\s*=\s*lenient\b/i.test(req.header('prefer') ?? '');
  for (const type of types ?? []) {
    if (!/^[A-Z][A-Za-z]+$/.test(type)) throw errors.invalid(`Unknown resource type "${type}" in _type`, '_type');
  }
  const result = await searchWithClientSecrets(ctx, await search(searchServicesFor(ctx), types, params, { lenient, withBuiltins: true }));
  const base = path === '' ? ctx.config.fhirBaseUrl : `${ctx.config.fhirBaseUrl}/${path}`;
  const links = searchLinks(base, result.paging);
  const response = textResponse(searchsetText(ctx.config.fhirBaseUrl, result, links));
  // The HTTP layer decides which pages to read ahead (http/walk-ahead.ts): it knows who walks.
  if (result.dependency) response.walk = { dependency: result.dependency, next: links.find(({ relation }) => relation === 'next')?.url };
  return response;
}
