import type { IncomingMessage } from 'node:http';
import { createRequestContext } from '../access/context.js';
import { isResourceType } from '../fhir/definitions.js';
import { incomingHeaders } from '../graphql/http-body.js';
import type { Identity } from '../identity/identity.js';
import { fhirRouter } from '../router/router.js';
import type { WalkPage } from '../router/types.js';
import { FHIR_BASE_PATH } from './fhir-adapter.js';
import { encodeForClient } from './node-answers.js';
import type { AnswerAhead, PageAhead, ReadAhead } from './read-ahead.js';
import { answerDirectly, DirectGet, type DirectAnswering, type FastPath } from './read-fast-path.js';
import { FHIR_CONTENT_TYPE } from './responses.js';

/** The type search's pattern in the route table, as the full path labels it in the metrics. */
const SEARCH_ROUTE = `${FHIR_BASE_PATH}/:type`;

/** `GET /fhir/R4/<Type>` with or without a query string. */
const SEARCH_PATH = /^\/fhir\/R4\/([A-Z][A-Za-z]{1,63})(?:\?(.*))?$/;

/**
 * The type search on the read's fast path (read-fast-path.ts): an app paging through a type sends
 * one after another, and Hono's routing and middleware chain, and the fetch Request and Response
 * objects around it, cost a page of results about as much as they cost a read. What clients see is
 * the full path's answer: the router does all of the search. `_pretty`, which the HTTP layer
 * applies, requests from browsers (`Origin`, which needs CORS headers) and Binary (whose search
 * answers are its own) take the full path; test/rest/search-fast-path.test.ts compares both ways.
 * Pages of walks by cursor are read ahead here (read-ahead.ts).
 */
export function searchFastPath(answering: DirectAnswering): FastPath {
  const { readAhead } = answering;
  return (request, response) => {
    if (request.method !== 'GET' || request.headers.origin !== undefined) return false;
    const match = SEARCH_PATH.exec(request.url ?? '');
    if (!match || match[1] === 'Binary' || !isResourceType(match[1])) return false;
    const query = new URLSearchParams(match[2] ?? '');
    if (query.has('_pretty')) return false;
    const headers = incomingHeaders(request);
    const ahead = readAhead && query.has('_cursor') ? answerAhead(answering, readAhead, `${match[1]}?${query.toString()}`, headers) : undefined;
    void answerDirectly(answering, request, response, new DirectGet(match[1], query, headers), headers, SEARCH_ROUTE, true, ahead);
    return true;
  };
}

/** Read-ahead for a request of a walk by cursor (`pathAndQuery`: its type and normalised query). */
function answerAhead(answering: DirectAnswering, readAhead: ReadAhead, pathAndQuery: string, headers: IncomingMessage['headers']): AnswerAhead | undefined {
  const key = readAhead.keyOf(pathAndQuery, headers);
  if (key === undefined) return undefined;
  return {
    kept: (identity) => readAhead.take(key, identity),
    after: (walk, identity, requestId) => {
      const next = walk.next === undefined ? undefined : typeAndQueryOf(walk.next, answering.services.config.fhirBaseUrl);
      if (!next) return;
      const nextKey = readAhead.keyOf(`${next.type}?${next.query.toString()}`, headers);
      if (nextKey !== undefined) readAhead.readAhead(nextKey, (at) => readPage(answering, new DirectGet(next.type, next.query, headers), identity, requestId, at));
    },
  };
}

/** The type and query of a `next` link this server wrote, or undefined for any other URL. */
function typeAndQueryOf(link: string, fhirBaseUrl: string): { type: string; query: URLSearchParams } | undefined {
  if (!link.startsWith(`${fhirBaseUrl}/`)) return undefined;
  const match = /^([A-Z][A-Za-z]{1,63})\?(.*)$/.exec(link.slice(fhirBaseUrl.length + 1));
  return match ? { type: match[1], query: new URLSearchParams(match[2]) } : undefined;
}

/**
 * A page read as its request would be (same caller, headers and router), encoded as it asks; none
 * when no place in work is spare (the server is busy) or the answer is not a page of the walk.
 */
async function readPage({ services, admission }: DirectAnswering, request: DirectGet, identity: Identity, requestId: string, at: number): Promise<PageAhead | undefined> {
  const release = admission.enterSpare();
  if (!release) return undefined;
  try {
    const ctx = createRequestContext(services, identity, `${requestId}-ahead`);
    const answer = await fhirRouter.dispatch(request, { config: services.config, database: services.db, ctx });
    if (answer.status !== 200 || typeof answer.body !== 'string' || !answer.walk) return undefined;
    const walk: WalkPage = answer.walk;
    const encoded = await encodeForClient(Buffer.from(answer.body, 'utf8'), { 'Content-Type': FHIR_CONTENT_TYPE, ...answer.headers }, request.header('accept-encoding'));
    return { status: answer.status, encoded, walk, at, identity };
  } finally {
    release();
  }
}
