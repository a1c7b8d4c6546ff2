import { isResourceType } from '../fhir/definitions.js';
import { incomingHeaders } from '../graphql/http-body.js';
import { FHIR_BASE_PATH } from './fhir-adapter.js';
import { answerDirectly, DirectGet, type DirectAnswering, type FastPath } from './read-fast-path.js';
import { walkAhead } from './walk-ahead.js';

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
  const { services, admission, readAhead } = answering;
  const walks = readAhead && { services, admission, readAhead };
  return (request, response) => {
    if (request.method !== 'GET' || request.headers.origin !== undefined) return false;
    const match = SEARCH_PATH.exec(request.url ?? '');
    if (!match || match[1] === 'Binary' || !isResourceType(match[1])) return false;
    const query = new URLSearchParams(match[2] ?? '');
    if (query.has('_pretty')) return false;
    const headers = incomingHeaders(request);
    const ahead = walks && walkAhead(walks, match[1], query, headers);
    void answerDirectly(answering, request, response, new DirectGet(match[1], query, headers), headers, SEARCH_ROUTE, true, ahead);
    return true;
  };
}
