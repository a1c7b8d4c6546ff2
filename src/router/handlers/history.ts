import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import type { BundleLink } from '../../fhir/types.js';
import { parseOffset, wholeNumber } from '../../search/service.js';
import type { HistoryOptions, HistoryPage } from '../../storage/types.js';
import { historyBundle, offsetLinks } from '../bundle.js';
import { resourceResponse } from '../responses.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';

const DEFAULT_HISTORY_COUNT = 20;
const MAX_HISTORY_COUNT = 1000;

/** The parameters history takes; others are ignored, or refused under `Prefer: handling=strict`. */
const HISTORY_PARAMETERS = new Set(['_count', '_offset', '_cursor', '_since', '_at', '_project', '_format', '_pretty']);

/** Search parameters history refuses whatever the handling: ignoring them would answer something else than asked. */
const NOT_FOR_HISTORY: Record<string, string> = {
  _sort: 'History is ordered newest first and takes no _sort',
  _total: 'History answers no total and takes no _total',
};

/**
 * `GET [type]/[id]/_history`, `GET [type]/_history` and `GET _history` (http.html 3.1.0.11) with
 * `_count`, `_since`, `_at` and, for a super admin's system history, `_project`. Next links carry a
 * keyset cursor, so a client can walk a whole project however deep; `_offset` paging stays for
 * clients that ask for it, up to the search's maximum offset.
 */
export async function historyHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const query = req.query;
  checkHistoryParameters(query, /(^|[;,\s])handling\s*=\s*strict\b/i.test(req.header('prefer') ?? ''));
  const options = historyOptions(query);
  const page = await ctx.repo.history(type, id, options);
  const path = [type, id, '_history'].filter((part) => part !== undefined).join('/');
  const base = `${ctx.config.fhirBaseUrl}/${path}`;
  const links = query.has('_offset') ? offsetLinks(base, query, options.offset ?? 0, options.count, page.hasMore) : cursorLinks(base, query, options.count, page);
  return resourceResponse(historyBundle(ctx.config.fhirBaseUrl, page.versions, links));
}

/** `_since` and `_at` are checked by the store, which takes both as instants. */
function historyOptions(query: URLSearchParams): HistoryOptions {
  const cursor = query.get('_cursor') ?? undefined;
  if (cursor !== undefined && query.has('_offset')) throw errors.invalid('Use either _cursor or _offset, not both', '_cursor');
  return {
    count: Math.min(intParam(query, '_count', DEFAULT_HISTORY_COUNT, 1), MAX_HISTORY_COUNT),
    offset: parseOffset(query.get('_offset') ?? undefined),
    cursor,
    since: query.get('_since') ?? undefined,
    at: query.get('_at') ?? undefined,
    projectId: query.get('_project') ?? undefined,
  };
}

function checkHistoryParameters(query: URLSearchParams, strict: boolean): void {
  for (const [name, value] of query) {
    if (value.includes('\0')) throw errors.invalid(`The value of ${name} holds a NUL character (U+0000)`, name);
  }
  for (const name of new Set(query.keys())) {
    const refusal = NOT_FOR_HISTORY[name];
    if (refusal !== undefined) throw errors.invalid(refusal, name);
    if (strict && !HISTORY_PARAMETERS.has(name)) {
      throw errors.invalid(`History takes no parameter ${name} (it takes ${[...HISTORY_PARAMETERS].join(', ')})`, name);
    }
  }
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

function intParam(query: URLSearchParams, name: string, fallback: number, min: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = wholeNumber(raw);
  if (value === undefined || value < min) throw errors.invalid(`${name} must be an integer >= ${min}, not "${raw}"`, name);
  return value;
}
