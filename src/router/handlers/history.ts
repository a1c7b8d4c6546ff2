import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import type { BundleLink } from '../../fhir/types.js';
import type { HistoryPage } from '../../storage/types.js';
import { historyBundle, offsetLinks } from '../bundle.js';
import { assertJsonAcceptable } from '../negotiation.js';
import { resourceResponse } from '../responses.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';

const DEFAULT_HISTORY_COUNT = 20;
const MAX_HISTORY_COUNT = 1000;

/**
 * `GET [type]/[id]/_history`, `GET [type]/_history` and `GET _history` (http.html 3.1.0.11) with
 * `_count`, `_since`, `_at` and, for a super admin's system history, `_project`. Next links carry a
 * keyset cursor, so a client can walk a whole project however deep; `_offset` paging stays for
 * clients that ask for it.
 */
export async function historyHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  assertJsonAcceptable(req.query.get('_format'), req.header('accept') ?? null);
  const query = req.query;
  const count = Math.min(intParam(query, '_count', DEFAULT_HISTORY_COUNT, 1), MAX_HISTORY_COUNT);
  const offsetParam = query.get('_offset');
  const offset = intParam(query, '_offset', 0, 0);
  const cursor = query.get('_cursor') ?? undefined;
  const projectId = query.get('_project') ?? undefined;
  const options = { count, offset, cursor, since: instantParam(query, '_since'), at: instantParam(query, '_at'), projectId };
  const page = await ctx.repo.history(type, id, options);
  const path = [type, id, '_history'].filter((part) => part !== undefined).join('/');
  const base = `${ctx.config.fhirBaseUrl}/${path}`;
  const links = offsetParam !== null ? offsetLinks(base, query, offset, count, page.hasMore) : cursorLinks(base, query, count, page);
  return resourceResponse(historyBundle(ctx.config.fhirBaseUrl, page.versions, links));
}

function cursorLinks(base: string, query: URLSearchParams, count: number, page: HistoryPage): BundleLink[] {
  const at = (cursor: string | undefined): string => {
    const copy = new URLSearchParams(query);
    copy.delete('_cursor');
    copy.set('_count', String(count));
    if (cursor !== undefined) copy.set('_cursor', cursor);
    return `${base}?${copy.toString()}`;
  };
  const links: BundleLink[] = [
    { relation: 'self', url: at(query.get('_cursor') ?? undefined) },
    { relation: 'first', url: at(undefined) },
  ];
  if (page.hasMore && page.nextCursor) links.push({ relation: 'next', url: at(page.nextCursor) });
  return links;
}

function instantParam(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name) ?? undefined;
  if (value !== undefined && Number.isNaN(Date.parse(value))) {
    throw errors.invalid(`${name} must be an instant such as 2024-01-31T12:00:00Z, not "${value}"`, name);
  }
  return value;
}

function intParam(query: URLSearchParams, name: string, fallback: number, min: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw errors.invalid(`${name} must be an integer >= ${min}, not "${raw}"`, name);
  return value;
}
