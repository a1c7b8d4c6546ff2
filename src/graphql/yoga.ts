import {
  createYoga,
  processRegularResult,
  type GraphQLParams,
  type Plugin,
  type YogaServerInstance,
} from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { RequestContext } from '../operations/context.js';
import { OperationOutcomeError } from '../fhir/outcome.js';
import { maskError, outcomeToGraphQLError, UNEXPECTED_ERROR_MESSAGE, useExecutionErrors } from './errors.js';
import { useCompiledQueries } from './compiled.js';
import { useIntrospectionCache } from './introspection-cache.js';
import { useFhirDirectives } from './directives.js';
import { assertFastPathPlugins, fastPathRequest, type FastPathRequest, type RequestHeaders } from './http-fast-path.js';
import { PreparedOperations, type PreparedOperation } from './prepared.js';
import { INSTANCE_ENDPOINT_PATTERN, instanceTarget, useInstanceGraphQL } from './instance.js';
import { useDocumentLimits } from './document-limits.js';
import { useVariablesInListPositions } from './variable-positions.js';
import { useQueryLimits } from './limits.js';
import { createLoaders } from './loaders.js';
import { yogaLogger } from './logging.js';
import { sharedSchema } from './schema.js';
import { graphiqlOptions, offlineGraphiQLRenderer } from './graphiql.js';

/** The paths the handler answers; the HTTP layer routes both (GET and POST) to it. */
export const GRAPHQL_PATHS = ['/graphql', '/fhir/R4/$graphql'] as const;

/**
 * A URLPattern pathname matching GRAPHQL_PATHS and the instance-level `/fhir/R4/<Type>/<id>/$graphql`
 * (`$` may arrive percent-encoded).
 */
const GRAPHQL_ENDPOINT_PATTERN = `/(graphql|fhir/R4/(?:\\$|%24)graphql|${INSTANCE_ENDPOINT_PATTERN})`;

export interface GraphQLHandlerOptions {
  /**
   * Builds the request context (authentication, project-scoped repository, logger). `requestId` is
   * the HTTP layer's id of the request, when it gave one; `addressOf` the caller's address;
   * `clientGone` the signal of the caller closing its connection, when the HTTP layer has one (the
   * Request `handle` builds is not the connection's, and its own signal never aborts).
   */
  getContext(request: Request, requestId: string | undefined, addressOf?: () => string, clientGone?: () => AbortSignal): Promise<RequestContext>;
  /** The server's logger, for what happens outside a request context. */
  log: Logger;
  /** Limits and switches of the GraphQL endpoint. */
  config: Config;
}

/** A GraphQL request as the HTTP layer has it: the body already read (see GraphQLHandler.handle). */
export interface GraphQLHttpRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: RequestHeaders;
  /** The body as text (POST); undefined for GET. */
  readonly body: string | undefined;
  readonly requestId: string;
  /** The caller's address, asked for only when authentication needs it. */
  readonly addressOf?: () => string;
  /** The signal of the caller closing its connection (its reads' statements are then cancelled). */
  readonly clientGone?: () => AbortSignal;
}

/** A GraphQL response for the HTTP layer: header names in lower case, the body as text. */
export interface GraphQLHttpResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string | null;
}

/**
 * The GraphQL endpoint. Called as a function it is a fetch handler (Request in, Response out), for
 * tests and any runtime; `handle` is the HTTP layer's cheaper entry, for a request whose body it has
 * already read: no web stream is built on either side.
 */
export interface GraphQLHandler {
  (request: Request): Promise<Response>;
  handle(request: GraphQLHttpRequest): Promise<GraphQLHttpResponse>;
  /** The operations `handle` answers without yoga (prepared.ts). */
  readonly prepared: PreparedOperations;
}

/** What yoga passes on from the caller to the context factory (its "server context"). */
interface ServerContext {
  requestId?: string;
  addressOf?: () => string;
  /**
   * The request's context, built once however many paths ask for it: a prepared operation that
   * falls back to yoga must not authenticate the request again (a wrong Basic secret would count
   * twice against its client and address, and cost a second scrypt run).
   */
  contextOf?: (request: Request) => Promise<RequestContext>;
}

/**
 * One yoga instance, built at start: GraphQL over HTTP (GET and POST) at both GRAPHQL_PATHS, GraphiQL
 * for browsers (GET with `Accept: text/html`), unexpected errors masked as "Unexpected error." and
 * logged, OperationOutcomeErrors shown with the OperationOutcome in `extensions.resource`.
 */
export function createGraphQLHandler(options: GraphQLHandlerOptions): GraphQLHandler {
  const started = performance.now();
  // Built by the process's first handler, shared by the later ones (schema.ts).
  const schema = sharedSchema();
  // The start-up target (schema ready in under 2 s) is read off this line (first handler of the process).
  options.log.info({ ms: Math.round(performance.now() - started) }, 'GraphQL schema built');
  const prepared = new PreparedOperations();
  // Limits first: a refused query stops before the instance-level read.
  const plugins = [
    useVariablesInListPositions(),
    useDocumentLimits(options.config),
    useQueryLimits(options.config),
    useFhirDirectives(),
    useInstanceGraphQL(schema),
    useExecutionErrors(),
    useIntrospectionCache(),
    // Last: it replaces the executor only after every other plugin's onExecute (which may stop execution or set the root).
    useCompiledQueries({ operations: prepared, schema }),
  ];
  assertFastPathPlugins(plugins as Plugin[]);
  const yoga = createYoga<ServerContext>({
    schema,
    graphqlEndpoint: GRAPHQL_ENDPOINT_PATTERN,
    // yoga's default fetch API (@whatwg-node's ponyfill on Node), not the native one: its Request and
    // Response keep a string body a string, where undici's wrap it in web streams (measured as most
    // of the HTTP cost of a small query). The HTTP layer limits body sizes before GraphQL sees them,
    // for REST and GraphQL alike; yoga's own limit would wrap every body in a stream to count it.
    maxRequestBodySize: false,
    context: async ({ request, requestId, addressOf, contextOf }) => {
      const requestContext = await buildRequestContext(options, request, { requestId, addressOf, contextOf });
      return { requestContext, loaders: createLoaders(requestContext) };
    },
    plugins,
    maskedErrors: { maskError, errorMessage: UNEXPECTED_ERROR_MESSAGE },
    graphiql: (request) => graphiqlOptions(new URL(request.url).pathname),
    renderGraphiQL: offlineGraphiQLRenderer(),
    landingPage: false,
    // CORS is the HTTP layer's job, the same for REST and GraphQL.
    cors: false,
    logging: yogaLogger(options.log),
  });
  const { Request: YogaRequest } = yoga.fetchAPI;
  const handler = (async (request: Request) => yoga.fetch(request, {})) as GraphQLHandler;
  Object.defineProperty(handler, 'prepared', { value: prepared });
  handler.handle = async (http) => {
    let built: Promise<RequestContext> | undefined;
    const contextOf = (request: Request) => (built ??= options.getContext(request, http.requestId, http.addressOf, http.clientGone));
    const serverContext = { requestId: http.requestId, addressOf: http.addressOf, contextOf, waitUntil: yoga.waitUntil };
    const fast = fastPathRequest(http.method, http.headers, http.body);
    if (fast) {
      // yoga's own Request class: built around the string body, no stream (the context reads its
      // headers and URL); its Headers read Node's header object as it is, without copying it.
      const request = new YogaRequest(http.url, { method: http.method, headers: asHeadersInit(http.headers), body: http.body });
      // Prepared operations run at the system endpoints (an instance-level query has its own schema and root).
      const operation = instanceTarget(request) ? undefined : prepared.find(fast.params);
      const answer = operation && (await preparedAnswer(operation, fast, request, serverContext, options));
      if (answer) return answer;
      const result = await fastResult(yoga, fast.params, request, serverContext);
      if (result !== undefined) return fromYogaResponse(processRegularResult(result, yoga.fetchAPI, fast.mediaType));
    }
    // Everything else (GET, GraphiQL, refusals) through yoga whole, with the fetch Request any runtime
    // would give it; handleRequest, not fetch, which would also tie the response to the request's AbortSignal.
    const request = new Request(http.url, { method: http.method, headers: asHeadersInit(http.headers), body: http.body });
    return fromYogaResponse(await yoga.handleRequest(request, serverContext));
  };
  return handler;
}

/**
 * Headers for a Request. Node's header object is a record of strings (used as it is) but for the
 * few headers Node keeps as lists (set-cookie and the like), which become one pair per value.
 */
function asHeadersInit(headers: RequestHeaders): HeadersInit {
  if (headers instanceof Headers) return headers;
  const values = Object.values(headers);
  if (values.every((value) => typeof value === 'string')) return headers as Record<string, string>;
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) for (const item of value) pairs.push([name, item]);
    else if (value !== undefined) pairs.push([name, value]);
  }
  return pairs;
}

type Yoga = YogaServerInstance<ServerContext, object>;
type YogaResult = Awaited<ReturnType<Yoga['getResultForParams']>>;

/**
 * The answer to a prepared operation (prepared.ts), or undefined for yoga to answer: when the
 * context cannot be built, the variables do not coerce, or the result has errors.
 */
async function preparedAnswer(
  operation: PreparedOperation,
  fast: FastPathRequest,
  request: Request,
  serverContext: ServerContext & { waitUntil: Yoga['waitUntil'] },
  options: GraphQLHandlerOptions,
): Promise<GraphQLHttpResponse | undefined> {
  try {
    const requestContext = await contextOfRequest(options, request, serverContext);
    const context = { ...serverContext, request, params: fast.params, requestContext, loaders: createLoaders(requestContext) };
    const result = await operation.compiled.query(undefined, context, fast.params.variables ?? {});
    if (!('data' in result) || result.errors?.length) return undefined;
    const body = JSON.stringify(result);
    // The headers yoga's regular result processor gives.
    return { status: 200, headers: { 'content-length': String(Buffer.byteLength(body)), 'content-type': `${fast.mediaType}; charset=utf-8` }, body };
  } catch {
    return undefined;
  }
}

/**
 * yoga's result for parsed parameters, or undefined when its parameter checks refused them: they
 * throw before anything runs, and yoga's full path then gives its own answer (the HTTP status and
 * headers of the refusal).
 */
async function fastResult(yoga: Yoga, params: GraphQLParams, request: Request, context: ServerContext & { waitUntil: Yoga['waitUntil'] }): Promise<NonNullable<YogaResult> | undefined> {
  try {
    return (await yoga.getResultForParams({ params, request }, context)) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Status, headers and body of yoga's response: its JSON (or GraphiQL's HTML) as the string it built
 * (`body` would wrap it in a stream). A result yoga streams (event stream, multipart) is read whole:
 * the schema has no subscriptions or incremental delivery, so such a stream is one result and ends.
 */
async function fromYogaResponse(response: Response): Promise<GraphQLHttpResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  const text = await response.text();
  return { status: response.status, headers, body: text === '' ? null : text };
}

/** A failure to build the context (e.g. authentication) answers with the OperationOutcome's status. */
async function buildRequestContext(options: GraphQLHandlerOptions, request: Request, from: ServerContext): Promise<RequestContext> {
  try {
    return await contextOfRequest(options, request, from);
  } catch (error) {
    if (error instanceof OperationOutcomeError) throw outcomeToGraphQLError(error, undefined, true);
    throw error;
  }
}

/** The request's context: the one `contextOf` built for it (handle), else a new one (a fetch call). */
function contextOfRequest(options: GraphQLHandlerOptions, request: Request, { requestId, addressOf, contextOf }: ServerContext): Promise<RequestContext> {
  return contextOf ? contextOf(request) : options.getContext(request, requestId, addressOf);
}
