import type { Services } from '../operations/context.js';
import { errors } from '../fhir/outcome.js';
import { createRequestContext } from '../access/context.js';
import type { Identity } from '../identity/identity.js';
import type { AuthenticationOptions } from '../auth/authenticate.js';
import { fhirRouter } from '../router/router.js';
import { textBody, utf8Text } from '../router/request-body.js';
import { StreamedBytes, type FhirMethod, type FhirRequest, type FhirResponse } from '../router/types.js';
import { bodyResponse, FHIR_CONTENT_TYPE, streamedResponse } from './responses.js';
import type { HonoContext } from './route.js';
import { routeLabel } from './metrics/route-label.js';
import { clientAddress } from './client-address.js';
import { clientGoneOf } from './client-gone.js';
import { authorizationHeader, incomingHeaders, incomingMessageOf, readRequestBytes, requestHeader } from '../graphql/http-body.js';
import type { AnswerAhead } from './read-ahead.js';
import { walkAhead, type WalkAheadParts } from './walk-ahead.js';

/** Where the FHIR router is mounted. */
export const FHIR_BASE_PATH = '/fhir/R4';

/**
 * Decides who is calling from the Authorization header (repeated headers joined with ", ");
 * throws an OperationOutcomeError (401) when it cannot. `known`: what admission control found for
 * the same header (auth/authenticate.ts knownCaller); `addressOf` gives the caller's address,
 * asked only when a wrong secret must be counted against it (HTTP Basic).
 */
export type Authenticator = (authorization: string | null, services: Services, options?: AuthenticationOptions) => Promise<Identity>;

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE']);

/**
 * REST onto the FHIR router: the HTTP request becomes a plain FhirRequest, the router's answer an
 * HTTP response. The route is matched before authentication, so an unknown path is a 404 for
 * anyone and the CapabilityStatement stays public.
 */
export function fhirRestHandler(services: Services, authenticate: Authenticator, walks?: WalkAheadParts): (c: HonoContext) => Promise<Response> {
  const maxBytes = services.config.maxBodyBytes;
  return async (c) => {
    // A declared length over the limit is refused before anything else looks at the request.
    if (Number(requestHeader(c, 'content-length') ?? 0) > maxBytes) throw errors.tooLarge(`The request body exceeds the limit of ${maxBytes} bytes`);
    const req = fhirRequestOf(c, maxBytes);
    const found = fhirRouter.match(req.method, req.path);
    if (found) c.set('route', `${FHIR_BASE_PATH}/${routeLabel(found.route.path)}`);
    const needsIdentity = found !== undefined && (!found.route.public || req.header('authorization') !== undefined);
    const ctx = needsIdentity ? createRequestContext(services, await authenticate(authorizationHeader(c), services, { known: c.get('knownCaller'), addressOf: () => clientAddress(c) }), c.get('requestId'), clientGoneOf(c)) : undefined;
    if (ctx) c.set('ctx', ctx);
    const interaction = found?.route.interaction;
    const ahead = walks && ctx && interaction && 'type' in interaction && interaction.type === 'search-type' ? walkAheadOf(c, req, walks) : undefined;
    const kept = await ahead?.kept(ctx!.identity);
    const response: FhirResponse = kept ? { status: kept.status, headers: kept.encoded.headers, body: kept.encoded.body } : await fhirRouter.dispatch(req, { config: services.config, database: services.db, ctx }, found);
    const walk = kept ? kept.walk : response.walk;
    // Once this answer is on its way: the next page is read while the client reads this one.
    if (ahead && walk) setImmediate(() => ahead.after(walk, ctx!.identity, c.get('requestId')));
    // X-Request-Id goes into the answer's own header record: added to the finished Response by the
    // logging middleware, it would turn that record into a fetch Headers object first.
    const headers = { ...response.headers, 'X-Request-Id': c.get('requestId') };
    const answer = toHttpResponse({ ...response, headers }, req.query.get('_pretty') === 'true');
    c.set('requestIdSent', true);
    return answer;
  };
}

/** Read-ahead for a GET type search (walk-ahead.ts), as Node parsed its headers; none under `_pretty` (re-indented here) or outside Node. */
function walkAheadOf(c: HonoContext, req: FhirRequest, walks: WalkAheadParts): AnswerAhead | undefined {
  const incoming = incomingMessageOf(c);
  // Binary's answers hide bot code, which depends on Bot resources, not only on Binary's own.
  if (req.method !== 'GET' || !incoming || req.path === 'Binary' || req.query.has('_pretty')) return undefined;
  return walkAhead(walks, req.path, req.query, incomingHeaders(incoming));
}

/**
 * Headers from Node's parsed request and the body read straight from it, within MAX_BODY_BYTES
 * (413 above): the fetch Request the Hono adapter would otherwise build costs much of a small
 * request (graphql/http-body.ts).
 */
function fhirRequestOf(c: HonoContext, maxBytes: number): FhirRequest {
  const url = c.req.url;
  const queryStart = url.indexOf('?');
  const method = c.req.method as FhirMethod;
  let bytes: Promise<Buffer> | undefined;
  const read = () => (bytes ??= readRequestBytes(c, maxBytes));
  return {
    method,
    path: c.req.path.slice(FHIR_BASE_PATH.length + 1),
    query: new URLSearchParams(queryStart < 0 ? '' : url.slice(queryStart + 1)),
    header: (name) => requestHeader(c, name),
    body: BODYLESS.has(method) ? undefined : textBody(async () => utf8Text(await read()), read),
  };
}

/** The router's answer as HTTP: FHIR JSON text as it is (re-indented for `_pretty`), resources serialised, bytes raw. */
export function toHttpResponse(response: FhirResponse, pretty: boolean): Response {
  const { status, headers, body } = response;
  if (body === undefined) return new Response(null, { status, headers });
  if (body instanceof Uint8Array) return bodyResponse(body, status, headers);
  if (body instanceof StreamedBytes) return streamedResponse(body, status, headers);
  return bodyResponse(fhirText(body, pretty), status, { 'Content-Type': FHIR_CONTENT_TYPE, ...headers });
}

/** A FHIR JSON body as text: stored text as it is (re-indented for `_pretty`), a built resource serialised. */
export function fhirText(body: string | object, pretty: boolean): string {
  if (typeof body !== 'string') return JSON.stringify(body, null, pretty ? 2 : undefined);
  return pretty ? JSON.stringify(JSON.parse(body), null, 2) : body;
}
