import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import { historyBundle, offsetLinks } from '../bundle.js';
import { assertJsonAcceptable } from '../negotiation.js';
import { resourceResponse } from '../responses.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';

const DEFAULT_HISTORY_COUNT = 20;
const MAX_HISTORY_COUNT = 1000;

/** `GET [type]/[id]/_history` and `GET [type]/_history` (http.html 3.1.0.11). */
export async function historyHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  assertJsonAcceptable(req.query.get('_format'), req.header('accept') ?? null);
  const query = req.query;
  const count = Math.min(intParam(query, '_count', DEFAULT_HISTORY_COUNT, 1), MAX_HISTORY_COUNT);
  const offset = intParam(query, '_offset', 0, 0);
  const since = instantParam(query, '_since');
  const page = await ctx.repo.history(type!, id, { count, offset, since });
  const path = id === undefined ? `${type}/_history` : `${type}/${id}/_history`;
  const links = offsetLinks(`${ctx.config.fhirBaseUrl}/${path}`, query, offset, count, page.hasMore);
  return resourceResponse(historyBundle(ctx.config.fhirBaseUrl, page.versions, links));
}

function instantParam(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name) ?? undefined;
  if (value !== undefined && Number.isNaN(Date.parse(value))) {
    throw errors.invalid(`${name} must be an instant such as 2024-01-31T12:00:00Z, not "${value}"`, name);
  }
  return value;
}

export function intParam(query: URLSearchParams, name: string, fallback: number, min: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw errors.invalid(`${name} must be an integer >= ${min}, not "${raw}"`, name);
  return value;
}
