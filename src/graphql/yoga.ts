import { createYoga } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { RequestContext } from '../context.js';
import { OperationOutcomeError } from '../fhir/outcome.js';
import { maskError, outcomeToGraphQLError, UNEXPECTED_ERROR_MESSAGE, useExecutionErrors } from './errors.js';
import { useFhirDirectives } from './directives.js';
import { INSTANCE_ENDPOINT_PATTERN, useInstanceGraphQL } from './instance.js';
import { useQueryLimits } from './limits.js';
import { createLoaders } from './loaders.js';
import { yogaLogger } from './logging.js';
import { buildSchema } from './schema.js';

/** The paths the handler answers; the HTTP layer routes both (GET and POST) to it. */
export const GRAPHQL_PATHS = ['/graphql', '/fhir/R4/$graphql'] as const;

/**
 * A URLPattern pathname matching GRAPHQL_PATHS and the instance-level `/fhir/R4/<Type>/<id>/$graphql`
 * (`$` may arrive percent-encoded).
 */
const GRAPHQL_ENDPOINT_PATTERN = `/(graphql|fhir/R4/(?:\\$|%24)graphql|${INSTANCE_ENDPOINT_PATTERN})`;

export interface GraphQLHandlerOptions {
  /** Builds the request context (authentication, project-scoped repository, logger). */
  getContext(request: Request): Promise<RequestContext>;
  /** The server's logger, for what happens outside a request context. */
  log: Logger;
  /** Limits and switches of the GraphQL endpoint. */
  config: Config;
}

/**
 * One yoga instance, built at start: GraphQL over HTTP (GET and POST) at both GRAPHQL_PATHS, GraphiQL
 * for browsers (GET with `Accept: text/html`), unexpected errors masked as "Unexpected error." and
 * logged, OperationOutcomeErrors shown with the OperationOutcome in `extensions.resource`.
 */
export function createGraphQLHandler(options: GraphQLHandlerOptions): (request: Request) => Promise<Response> {
  const started = performance.now();
  const schema = buildSchema();
  // The start-up figure (schema ready in under 2 s) is read off this line.
  options.log.info({ ms: Math.round(performance.now() - started) }, 'GraphQL schema built');
  const yoga = createYoga({
    schema,
    graphqlEndpoint: GRAPHQL_ENDPOINT_PATTERN,
    // Native Request/Response, so the HTTP layer gets a Response it knows (yoga's default is a ponyfill).
    fetchAPI: { Request, Response, Headers },
    context: async ({ request }) => {
      const requestContext = await buildRequestContext(options, request);
      return { requestContext, loaders: createLoaders(requestContext) };
    },
    // Limits first: a refused query stops before the instance-level read.
    plugins: [
      useQueryLimits(options.config),
      useFhirDirectives(),
      useInstanceGraphQL(schema),
      useExecutionErrors(),
    ],
    maskedErrors: { maskError, errorMessage: UNEXPECTED_ERROR_MESSAGE },
    graphiql: (request) => ({ title: 'Flint GraphiQL', endpoint: new URL(request.url).pathname }),
    landingPage: false,
    // CORS is the HTTP layer's job, the same for REST and GraphQL.
    cors: false,
    logging: yogaLogger(options.log),
  });
  return async (request) => yoga.fetch(request);
}

/** A failure to build the context (e.g. authentication) answers with the OperationOutcome's status. */
async function buildRequestContext(options: GraphQLHandlerOptions, request: Request): Promise<RequestContext> {
  try {
    return await options.getContext(request);
  } catch (error) {
    if (error instanceof OperationOutcomeError) throw outcomeToGraphQLError(error, undefined, true);
    throw error;
  }
}
