import type { IncomingMessage, ServerResponse } from 'node:http';
import { isResourceType } from '../fhir/definitions.js';
import { toOperationOutcomeError } from '../fhir/outcome.js';
import { createRequestContext } from '../access/context.js';
import { incomingHeaders } from '../graphql/http-body.js';
import { headerValue } from '../graphql/http-fast-path.js';
import type { RequestContext, Services } from '../operations/context.js';
import { fhirRouter } from '../router/router.js';
import type { FhirRequest, FhirResponse, WalkPage } from '../router/types.js';
import type { Identity } from '../identity/identity.js';
import type { AnswerAhead, ReadAhead } from './read-ahead.js';
import type { Admission } from './admission.js';
import { laneOf } from './admission-middleware.js';
import { knownCaller, recentIdentity } from '../auth/authenticate.js';
import { FHIR_BASE_PATH, fhirText, type Authenticator } from './fhir-adapter.js';
import { encodeForClient, writeAnswer, type EncodedAnswer } from './node-answers.js';
import { logRequest, requestIdOf } from './request-log.js';
import { FHIR_CONTENT_TYPE, STREAMED_FROM } from './responses.js';
import type { RequestMetrics } from './metrics/server-metrics.js';
import { closedSignal } from './client-gone.js';

/**
 * Answers a request straight from Node's http objects; false when it is not one it answers (the
 * Hono application then gets it).
 */
export type FastPath = (request: IncomingMessage, response: ServerResponse) => boolean;

/** The read's pattern in the route table, as the full path labels it in the metrics. */
const READ_ROUTE = `${FHIR_BASE_PATH}/:type/:id`;

/** Longest text answer written as a string (at most 3 bytes a character: within STREAMED_FROM). */
const MAX_TEXT_WRITE = Math.floor(STREAMED_FROM / 3);

/** `GET /fhir/R4/<Type>/<id>` and nothing else: no query, so `_format`, `_pretty`, `_summary`... take the full path. */
const READ_PATH = /^\/fhir\/R4\/([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})$/;

/**
 * The read by id, the most frequent request, without the layers the FHIR router does not need
 * for it: Hono's routing and middleware chain and the fetch Request/Response objects that
 * @hono/node-server translates to and from Node's (most of a cached read's server CPU beside
 * Node's own HTTP code; measured: see bench/RESULTS.md). What clients see is the full path's
 * answer: the same admission control, authentication, request context, router (negotiation,
 * conditional reads, access control), headers, compression and log line. Requests from browsers
 * (`Origin`, which needs CORS headers) and Binary reads (raw bytes, possibly large) take the full
 * path; test/rest/read-fast-path.test.ts compares both ways.
 */
export function readFastPath(answering: DirectAnswering): FastPath {
  return (request, response) => {
    if (request.method !== 'GET' || request.headers.origin !== undefined) return false;
    const match = READ_PATH.exec(request.url ?? '');
    if (!match || match[1] === 'Binary' || !isResourceType(match[1])) return false;
    const headers = incomingHeaders(request);
    void answerDirectly(answering, request, response, new DirectGet(request.url!.slice(FHIR_BASE_PATH.length + 1), new URLSearchParams(), headers), headers, READ_ROUTE);
    return true;
  };
}

/** What a request answered straight from Node's objects needs of the server. */
export interface DirectAnswering {
  readonly services: Services;
  readonly admission: Admission;
  readonly authenticate: Authenticator;
  readonly metrics: RequestMetrics;
  /** Where pages of walks by cursor are read ahead (the search's fast path); none when SEARCH_READ_AHEAD is false. */
  readonly readAhead?: ReadAhead;
}

/**
 * Answers `fhirRequest` as the full path would after Hono's layers: admission control,
 * authentication, request context, the FHIR router, the answer (compressed when asked), its
 * metrics (under `route`) and log line. `headers`: Node's, as incomingHeaders gives them.
 * `readsStopWhenClientGoes`: its statements are cancelled when the client closes the connection.
 */
export async function answerDirectly(
  { services, admission, authenticate, metrics }: DirectAnswering,
  request: IncomingMessage,
  response: ServerResponse,
  fhirRequest: FhirRequest,
  headers: IncomingMessage['headers'],
  route: string,
  readsStopWhenClientGoes = false,
  ahead?: AnswerAhead,
): Promise<void> {
  const started = performance.now();
  const requestId = requestIdOf(headerValue(headers, 'x-request-id') ?? undefined);
  const path = request.url!;
  let status = 500;
  let ctx: RequestContext | undefined;
  let walked: { walk: WalkPage; identity: Identity } | undefined;
  try {
    const authorization = headers.authorization;
    const known = knownCaller(services.auth, authorization);
    // Values at hand are not awaited: an await takes a turn of the microtask queue even on a value.
    const entered = admission.enter(laneOf(known), () => closedSignal(response));
    const release = typeof entered === 'function' ? entered : await entered;
    try {
      const identity =
        recentIdentity(services.auth, authorization, known) ??
        (await authenticate(authorization ?? null, services, { known, addressOf: () => request.socket.remoteAddress ?? 'unknown' }));
      // A search may read for long: its statements are cancelled when its client leaves. A read by
      // id or a create is one short statement, which a signal per request would only slow.
      const clientGone = readsStopWhenClientGoes ? () => closedSignal(response) : undefined;
      ctx = createRequestContext(services, identity, requestId, clientGone);
      const keeping = ahead?.kept(identity);
      const kept = keeping && (await keeping);
      let walk: WalkPage | undefined;
      if (kept) {
        status = kept.status;
        walk = kept.walk;
        writeAnswer(response, status, { ...kept.encoded.headers, 'X-Request-Id': requestId }, kept.encoded.body, services.config.sendTimeoutMs, services.log);
      } else {
        const answer = await fhirRouter.dispatch(fhirRequest, { config: services.config, database: services.db, ctx });
        status = answer.status;
        walk = answer.walk;
        const keep = status === 200 && walk ? ahead?.keep : undefined;
        const sending = send(response, answer, requestId, headerValue(headers, 'accept-encoding') ?? undefined, services, keep !== undefined);
        const encoded = sending && (await sending);
        if (keep && encoded) keep({ status, encoded: withoutRequestId(encoded), walk: walk!, identity });
      }
      if (walk) walked = { walk, identity };
    } finally {
      release();
    }
  } catch (error) {
    const failure = toOperationOutcomeError(error);
    if (failure.status >= 500) (ctx?.log ?? services.log).error({ err: error }, 'request failed');
    status = failure.status;
    const answer: FhirResponse = { status, headers: failure.headers ?? {}, body: failure.outcome };
    try {
      await send(response, answer, requestId, headerValue(headers, 'accept-encoding') ?? undefined, services);
    } catch {
      response.destroy();
    }
  }
  metrics.observe(fhirRequest.method, route, status, started);
  logRequest(services.log, requestId, fhirRequest.method, path, status, started);
  // After its own place in work is freed: the next page is read only while places are spare.
  if (ahead && walked) ahead.after(walked.walk, walked.identity, requestId);
}

/** A GET as the FHIR router takes it (a read, a search): a class, one shape for every request, its header lookup a method rather than a closure. */
export class DirectGet implements FhirRequest {
  readonly method = 'GET';

  constructor(
    readonly path: string,
    readonly query: URLSearchParams,
    private readonly headers: IncomingMessage['headers'],
  ) {}

  header(name: string): string | undefined {
    return headerValue(this.headers, name) ?? undefined;
  }
}

/**
 * Writes the answer; a promise only when it has to wait (compression), of the answer as encoded
 * and sent. `encoded`: the answer is to be kept, so it is always encoded (never sent as a string).
 */
function send(
  response: ServerResponse,
  answer: FhirResponse,
  requestId: string,
  acceptEncoding: string | undefined,
  services: Services,
  encoded = false,
): Promise<EncodedAnswer> | undefined {
  const { body } = answer;
  if (body === undefined) {
    response.writeHead(answer.status, { ...answer.headers, 'X-Request-Id': requestId }).end();
    return undefined;
  }
  const text = body instanceof Uint8Array ? undefined : fhirText(body, false);
  // One headers object, in the order the full path writes them: the content type, the answer's, the id.
  const headers: Record<string, string> = text === undefined ? {} : { 'Content-Type': FHIR_CONTENT_TYPE };
  Object.assign(headers, answer.headers);
  headers['X-Request-Id'] = requestId;
  if (!encoded && text !== undefined && acceptEncoding === undefined && text.length <= MAX_TEXT_WRITE) {
    // Sent as the string it is: Node writes it with the headers in one piece, no copy made first.
    writeAnswer(response, answer.status, headers, text, services.config.sendTimeoutMs, services.log);
    return undefined;
  }
  const bytes = body instanceof Uint8Array ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : Buffer.from(text!, 'utf8');
  return encodeForClient(bytes, headers, acceptEncoding).then((sent) => {
    writeAnswer(response, answer.status, sent.headers, sent.body, services.config.sendTimeoutMs, services.log);
    return sent;
  });
}

/** An answer's headers without its request's id, which each answer of it gets anew. */
function withoutRequestId({ headers, body }: EncodedAnswer): EncodedAnswer {
  const { 'X-Request-Id': _sent, ...rest } = headers;
  return { headers: rest, body };
}
