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
 * Read-ahead for a type search reached by a cursor (`pathAndQuery`: its type and its query as
 * URLSearchParams writes it; `headers`: Node's), or undefined when its answer must be read anew
 * (read-ahead.ts keyOf). Both HTTP paths of a search use it (search-fast-path.ts, fhir-adapter.ts).
 */
export function walkAhead(parts: WalkAheadParts, pathAndQuery: string, headers: IncomingHttpHeaders): AnswerAhead | undefined {
  const { readAhead } = parts;
  const key = readAhead.keyOf(pathAndQuery, headers);
  if (key === undefined) return undefined;
  return {
    kept: (identity) => readAhead.take(key, identity),
    after: (walk, identity, requestId) => {
      const next = walk.next === undefined ? undefined : typeAndQueryOf(walk.next, parts.services.config.fhirBaseUrl);
      if (!next) return;
      const nextKey = readAhead.keyOf(`${next.type}?${next.query.toString()}`, headers);
      if (nextKey !== undefined) readAhead.readAhead(nextKey, (at) => readPage(parts, searchRequest(next.type, next.query, headers), identity, requestId, at));
    },
  };
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
