import type { IncomingHttpHeaders } from 'node:http';
import { createRequestContext } from '../access/context.js';
import { headerValue } from '../graphql/http-fast-path.js';
import type { Identity } from '../identity/identity.js';
import type { Services } from '../operations/context.js';
import { fhirRouter } from '../router/router.js';
import type { FhirRequest } from '../router/types.js';
import type { Admission } from './admission.js';
import { encodeForClient } from './node-answers.js';
import type { AnswerAhead, PageAhead, ReadAhead } from './read-ahead.js';
import { FHIR_CONTENT_TYPE } from './responses.js';

/** What reading a walk's pages ahead needs of the server. */
export interface WalkAheadParts {
  readonly services: Services;
  readonly admission: Admission;
  readonly readAhead: ReadAhead;
}

/**
 * Read-ahead for a type search (`type` and `query`; `headers`: Node's), or undefined when its answer
 * must be read anew (read-ahead.ts keyOf) or it is a page reached by `_offset`. A page reached by
 * cursor is answered from what was read ahead for it, and has the page after it read ahead; a first
 * page has its second read ahead only when its caller walked that search by cursor before, and is
 * then kept for that caller's next request (on the fast path, which has its encoded answer). Both
 * HTTP paths of a search use it (search-fast-path.ts, fhir-adapter.ts).
 */
export function walkAhead(parts: WalkAheadParts, type: string, query: URLSearchParams, headers: IncomingHttpHeaders): AnswerAhead | undefined {
  const { readAhead } = parts;
  const byCursor = query.has('_cursor');
  if (!byCursor && query.has('_offset')) return undefined;
  const key = readAhead.keyOf(`${type}?${query.toString()}`, headers);
  if (key === undefined) return undefined;
  // A first page's key is its walker's key (its search without a cursor).
  const returning = !byCursor && readAhead.walks(key);
  return {
    kept: (identity) => (byCursor || returning ? readAhead.take(key, identity) : undefined),
    keep: returning ? readAhead.keepAnswer(key) : undefined,
    after: (walk, identity, requestId) => {
      // keyOf gave `key`, so it gives these too (same headers). A cursor page is its link.
      if (byCursor) readAhead.walked(readAhead.keyOf(`${type}?${withoutCursor(query).toString()}`, headers)!);
      const next = walk.next === undefined ? undefined : typeAndQueryOf(walk.next, parts.services.config.fhirBaseUrl);
      if (!next?.query.has('_cursor')) return;
      const walked = byCursor || returning || readAhead.walks(readAhead.keyOf(`${next.type}?${withoutCursor(next.query).toString()}`, headers)!);
      if (!walked) return;
      const nextKey = readAhead.keyOf(`${next.type}?${next.query.toString()}`, headers)!;
      readAhead.readAhead(nextKey, (at) => readPage(parts, searchRequest(next.type, next.query, headers), identity, requestId, at));
    },
  };
}

function withoutCursor(query: URLSearchParams): URLSearchParams {
  const rest = new URLSearchParams(query);
  rest.delete('_cursor');
  return rest;
}

/** The type and query of a `next` link this server wrote, or undefined for any other URL. */
function typeAndQueryOf(link: string, fhirBaseUrl: string): { type: string; query: URLSearchParams } | undefined {
  if (!link.startsWith(`${fhirBaseUrl}/`)) return undefined;
  const match = /^([A-Z][A-Za-z]{1,63})\?(.*)$/.exec(link.slice(fhirBaseUrl.length + 1));
  return match ? { type: match[1], query: new URLSearchParams(match[2]) } : undefined;
}

function searchRequest(type: string, query: URLSearchParams, headers: IncomingHttpHeaders): FhirRequest {
  return { method: 'GET', path: type, query, header: (name) => headerValue(headers, name) ?? undefined };
}

/**
 * A page read as its request would be (same caller, headers and router), encoded as it asks; none
 * when no place in work is spare (the server is busy) or the answer is not a page of the walk.
 */
async function readPage({ services, admission }: WalkAheadParts, request: FhirRequest, identity: Identity, requestId: string, at: number): Promise<PageAhead | undefined> {
  const release = admission.enterSpare();
  if (!release) return undefined;
  try {
    const ctx = createRequestContext(services, identity, `${requestId}-ahead`);
    const answer = await fhirRouter.dispatch(request, { config: services.config, database: services.db, ctx });
    if (answer.status !== 200 || typeof answer.body !== 'string' || !answer.walk) return undefined;
    const encoded = await encodeForClient(Buffer.from(answer.body, 'utf8'), { 'Content-Type': FHIR_CONTENT_TYPE, ...answer.headers }, request.header('accept-encoding'));
    return { status: answer.status, encoded, walk: answer.walk, at, identity };
  } finally {
    release();
  }
}
