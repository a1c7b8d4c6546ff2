import { randomUUID } from 'node:crypto';
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { authenticateAuthorization } from '../auth/authenticate.js';
import { type Services } from '../operations/context.js';
import { createRequestContext } from '../access/context.js';
import { INSTANCE_GRAPHQL_ROUTE } from '../graphql/instance.js';
import { createGraphQLHandler, GRAPHQL_PATHS } from '../graphql/yoga.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors, toOperationOutcomeError } from '../fhir/outcome.js';
import { graphiqlAnswer, isGraphiQLVisit } from './graphiql-answer.js';
import { authorizationHeader, nodeHeadersOf, readRequestText, requestHeader } from '../graphql/http-body.js';
import type { AppEnv, HonoContext, Route } from './route.js';
import { FHIR_BASE_PATH, fhirRestHandler, type Authenticator } from './fhir-adapter.js';
import { bodyResponse, outcomeResponse } from './responses.js';
import { admissionControl } from './admission-middleware.js';
import { responseCompression } from './compression.js';
import { Admission } from './admission.js';
import { readFastPath, type DirectAnswering, type FastPath } from './read-fast-path.js';
import { createFastPath } from './create-fast-path.js';
import { searchFastPath } from './search-fast-path.js';
import type { ReadAhead } from './read-ahead.js';
import type { HttpHandlers } from './transport.js';
import { ROUTES } from './routes.js';
import { logRequest, requestIdOf } from './request-log.js';
import { routeOf } from './metrics/route-label.js';
import { clientAddress } from './client-address.js';
import { clientGoneOf } from './client-gone.js';
import { clientClosed } from '../db/cancellation.js';
import type { MetricsExposition, RequestMetrics } from './metrics/server-metrics.js';

/** Every non-public route needs a valid bearer token (src/auth/authenticate.ts): there is no other mode. */
const bearerAuthentication: Authenticator = (authorization, services, options) => authenticateAuthorization(services.auth, authorization, options);

/** What the HTTP layer reports to: request metrics, and what `GET /metrics` answers. */
export interface HttpObservability {
  readonly metrics: RequestMetrics;
  readonly exposition: MetricsExposition;
}

/**
 * What answers HTTP: the application, and the fast path of reads by id beside it, sharing one
 * admission control. `admission` is the server's own (the metrics read its load).
 */
export function createHttpHandlers(services: Services, admission: Admission, observability: HttpObservability, readAhead?: ReadAhead): HttpHandlers {
  return {
    fetch: createApp(services, admission, observability, readAhead).fetch,
    fastPath: directPaths({ services, admission, authenticate: bearerAuthentication, metrics: observability.metrics, readAhead }),
  };
}

/** Reads by id, type searches and creates, answered without the application (read-fast-path.ts, search-fast-path.ts, create-fast-path.ts). */
function directPaths(answering: DirectAnswering): FastPath {
  const read = readFastPath(answering);
  const search = searchFastPath(answering);
  const create = createFastPath(answering);
  return (request, response) => read(request, response) || search(request, response) || create(request, response);
}

/** Builds the HTTP application: one route table, one error shape (OperationOutcome). */
export function createApp(services: Services, admission: Admission, observability: HttpObservability, readAhead?: ReadAhead): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(requestLogging(services, observability));
  app.use(crossOrigin(services));
  app.use(responseCompression());
  app.use(admissionControl(admission, services.auth));
  // Before the body limit middleware: GraphQL and the FHIR router read their bodies themselves,
  // within the same limit (graphql/http-body.ts).
  mountGraphQL(app, services, bearerAuthentication);
  const authenticated = authentication(services, bearerAuthentication);
  const mount = (route: Route) =>
    route.public ? app.on(route.method, route.path, (c) => route.handler(c)) : app.on(route.method, route.path, authenticated, (c) => route.handler(c));
  // Identity documents under the FHIR base (bodiless GETs) before the router's wildcard.
  const underFhirBase = (route: Route) => route.path.startsWith(`${FHIR_BASE_PATH}/`);
  ROUTES.filter(underFhirBase).forEach(mount);
  const fhir = fhirRestHandler(services, bearerAuthentication, readAhead && { services, admission, readAhead });
  app.all(FHIR_BASE_PATH, fhir);
  app.all(`${FHIR_BASE_PATH}/*`, fhir);
  app.use(requestBodyLimit(services.config.maxBodyBytes));
  ROUTES.filter((route) => !underFhirBase(route)).forEach(mount);
  app.notFound((c) => {
    const error = errors.notFound(`No endpoint at ${c.req.method} ${c.req.path}`);
    return outcomeResponse(error.outcome, error.status);
  });
  app.onError((error, c) => {
    const outcomeError = toOperationOutcomeError(error);
    if (outcomeError.status >= 500) {
      (c.get('ctx')?.log ?? services.log).error({ err: error }, 'request failed');
    }
    return outcomeResponse(outcomeError.outcome, outcomeError.status, outcomeError.headers);
  });
  return app;
}

/**
 * GraphQL at `/graphql`, `/fhir/R4/$graphql` and `/fhir/R4/<Type>/<id>/$graphql` (instance level):
 * one yoga instance, built here once, with the same authentication and request context as REST.
 */
function mountGraphQL(app: Hono<AppEnv>, services: Services, authenticate: Authenticator): void {
  const graphql = createGraphQLHandler({
    log: services.log,
    config: services.config,
    getContext: async (request, requestId, addressOf, clientGone) =>
      createRequestContext(services, await authenticate(request.headers.get('authorization'), services, { addressOf }), requestId ?? randomUUID(), clientGone ?? (() => request.signal)),
  });
  const handle = async (c: HonoContext): Promise<Response> => {
    if (isGraphiQLVisit(c)) return graphiqlAnswer(c);
    const method = c.req.method;
    const requestId = c.get('requestId');
    // The one signal its statements were cancelled by, so that the answer can say so (below).
    let gone: AbortSignal | undefined;
    const clientGone = clientGoneOf(c);
    const result = await graphql.handle({
      method,
      url: c.req.url,
      headers: nodeHeadersOf(c) ?? c.req.raw.headers,
      body: method === 'POST' ? await readRequestText(c, services.config.maxBodyBytes) : undefined,
      requestId,
      addressOf: () => clientAddress(c),
      clientGone: () => (gone ??= clientGone()),
    });
    // A read cancelled because its client left comes back as a GraphQL error of a 200 answer;
    // nobody reads it, and its log line and metrics say 499, as REST's do.
    if (gone?.aborted) throw clientClosed();
    // X-Request-Id is set here, not by requestLogging: a header added to a finished Response
    // turns its header record into a fetch Headers object, copied again when it is written.
    c.set('requestIdSent', true);
    const headers = { ...result.headers, 'x-request-id': requestId };
    return result.body === null ? new Response(null, { status: result.status, headers }) : bodyResponse(result.body, result.status, headers);
  };
  for (const path of GRAPHQL_PATHS) app.on(['GET', 'POST'], path, handle);
  app.on(['GET', 'POST'], INSTANCE_GRAPHQL_ROUTE, (c) => {
    const type = c.req.param('type') as string;
    // As REST answers for an unknown type, before authentication or GraphQL parsing.
    if (!isResourceType(type)) throw errors.notSupported(`Unknown resource type "${type}"`);
    return handle(c);
  });
}

/**
 * Larger bodies get 413 with an OperationOutcome. GET and HEAD requests cannot have a body, and
 * skip the check: Hono's middleware asks for the request's body, which makes the Node adapter
 * build a full fetch Request for every read (a sizeable share of the CPU of a cached REST read;
 * measured: see bench/RESULTS.md).
 */
function requestBodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw errors.tooLarge(`The request body exceeds the limit of ${maxBytes} bytes`);
    },
  });
  return (c, next) => (c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limit(c, next));
}

/**
 * CORS for browser apps. Browsers send `Origin` on every cross-origin request, so requests without
 * it skip the middleware: it is a sizeable share of the cost of a cached read (measured: see
 * bench/RESULTS.md).
 */
function crossOrigin(services: Services): MiddlewareHandler<AppEnv> {
  const origins = services.config.corsOrigins;
  const handler = cors({
    origin: origins.includes('*') ? '*' : [...origins],
    allowHeaders: ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'If-Modified-Since', 'If-None-Exist', 'Prefer', 'X-Request-Id'],
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    exposeHeaders: ['Location', 'Content-Location', 'ETag', 'Last-Modified', 'X-Request-Id'],
    maxAge: 86_400,
  });
  return (c, next) => (requestHeader(c, 'origin') ? handler(c, next) : next());
}

/** One structured log line per request (id, method, path, status, duration), and its metrics. */
function requestLogging(services: Services, { metrics, exposition }: HttpObservability): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const requestId = requestIdOf(requestHeader(c, 'x-request-id'));
    c.set('services', services);
    c.set('requestId', requestId);
    c.set('metricsExposition', exposition);
    await next();
    if (!c.get('requestIdSent')) c.res.headers.set('X-Request-Id', requestId);
    const status = c.res.status;
    metrics.observe(c.req.method, routeOf(c), status, started);
    logRequest(services.log, requestId, c.req.method, c.req.path, status, started);
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function authentication(services: Services, authenticate: Authenticator): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const identity = await authenticate(authorizationHeader(c), services, { known: c.get('knownCaller'), addressOf: () => clientAddress(c) });
    const ctx = createRequestContext(services, identity, c.get('requestId'));
    c.set('ctx', ctx);
    await next();
    // Admin and account endpoints write through the auth service's own connections: with read
    // replicas, the caller's next reads wait for what they wrote (docs/replicas.md).
    if (!SAFE_METHODS.has(c.req.method)) await ctx.reads.wrote();
  };
}
