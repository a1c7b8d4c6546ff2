import type { IncomingHttpHeaders } from 'node:http';
import type { GraphQLParams, Plugin } from 'graphql-yoga';

/**
 * The common GraphQL request (POST, a JSON object body, a JSON response) without yoga's HTTP layer.
 * yoga answers it by parsing the body, checking the parameters (onParams), executing (envelop), and
 * choosing a result processor by the Accept header (onResultProcess); the fetch adapter around that
 * (request hooks, Request and Response objects, an AbortSignal) is most of the cost of a small
 * query (measured: see bench/RESULTS.md). GraphQLHandler.handle calls yoga's own
 * `getResultForParams` and `processRegularResult` for such requests, so parameters, plugins,
 * errors, masking, status codes and the JSON text are yoga's; everything else (GET, GraphiQL, other
 * media types, bodies yoga would refuse) goes through yoga whole. test/graphql/transport.test.ts
 * compares both ways.
 */
export interface FastPathRequest {
  readonly params: GraphQLParams;
  /** The response media type yoga's content negotiation would choose. */
  readonly mediaType: string;
}

/** Request headers: a fetch Headers object, or Node's parsed headers (names in lower case). */
export type RequestHeaders = Headers | IncomingHttpHeaders;

export function headerValue(headers: RequestHeaders, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const value = headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
}

/** The request, when it is one the fast path answers exactly as yoga would; undefined otherwise. */
export function fastPathRequest(method: string, headers: RequestHeaders, body: string | undefined): FastPathRequest | undefined {
  if (method !== 'POST' || body === undefined || !isJsonContentType(headerValue(headers, 'content-type'))) return undefined;
  const mediaType = regularMediaType(headerValue(headers, 'accept'));
  if (!mediaType) return undefined;
  let params: unknown;
  try {
    params = JSON.parse(body);
  } catch {
    // yoga's answer to invalid JSON is its own.
    return undefined;
  }
  // A list is a batch, which yoga refuses (batching is off): also yoga's answer.
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  return { params: params as GraphQLParams, mediaType };
}

/** yoga's test for a JSON request (request-parser/utils.ts isContentTypeMatch with application/json). */
function isJsonContentType(header: string | null): boolean {
  const type = header?.split(',')[0];
  return type === 'application/json' || type?.startsWith('application/json;') === true;
}

/** The media types of yoga's regular (non-streamed) result processor, in its order. */
const REGULAR_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'] as const;

/**
 * The media type yoga's result processors (plugins/use-result-processor.ts) pick for a single
 * result: the request's media types (utf-8 only) from last to first, each tried against the
 * processors in order, the last match winning. The regular processor comes last, so it wins
 * whenever it matches at all; when it does not (an Accept of only text/event-stream, say), the
 * request is not for the fast path.
 */
export function regularMediaType(accept: string | null): string | undefined {
  // Clients send the same few Accept headers: the answer is kept for each (undefined too).
  const key = accept ?? '';
  if (mediaTypes.has(key)) return mediaTypes.get(key);
  const chosen = negotiateMediaType(accept);
  if (mediaTypes.size >= MAX_KEPT_MEDIA_TYPES) mediaTypes.clear();
  mediaTypes.set(key, chosen);
  return chosen;
}

const MAX_KEPT_MEDIA_TYPES = 100;
const mediaTypes = new Map<string, string | undefined>();

function negotiateMediaType(accept: string | null): string | undefined {
  const requested: string[] = [];
  for (const entry of (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',')) {
    const [mediaType, ...params] = entry.split(';');
    const charset = params.find((param) => param.includes('charset=')) ?? 'charset=utf-8';
    if (charset === 'charset=utf-8') requested.push(mediaType);
  }
  let chosen: string | undefined;
  for (const mediaType of requested.reverse()) {
    const [type, subtype] = mediaType.split('/');
    for (const offered of REGULAR_MEDIA_TYPES) {
      const [offeredType, offeredSubtype] = offered.split('/');
      if ((type === '*' || type === offeredType) && (subtype === '*' || subtype === offeredSubtype)) chosen = offered;
    }
  }
  return chosen;
}

/**
 * Plugin hooks the fast path does not run (request and response hooks of the HTTP layer, result
 * processors) or could run twice (after execution, if a later step threw). Checked on our plugins at
 * start, so adding such a hook fails loudly instead of being skipped for most requests.
 */
const HOOKS_OUTSIDE_FAST_PATH = ['onRequest', 'onRequestParse', 'onResultProcess', 'onResponse', 'onExecutionResult'] as const;

export function assertFastPathPlugins(plugins: readonly Plugin[]): void {
  for (const plugin of plugins) {
    const hook = HOOKS_OUTSIDE_FAST_PATH.find((name) => name in plugin);
    if (hook) throw new Error(`GraphQL plugin with ${hook}: the HTTP fast path (src/graphql/http-fast-path.ts) would skip it`);
  }
}
