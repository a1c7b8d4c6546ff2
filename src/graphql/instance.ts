import { ID_SOURCE } from '../fhir/ids.js';
import { GraphQLSchema, isObjectType, type GraphQLNamedType, type GraphQLObjectType } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { errors, OperationOutcomeError } from '../fhir/outcome.js';
import type { GraphQLContext } from './context.js';
import { outcomeToGraphQLError } from './errors.js';

/**
 * Instance-level `$graphql` (http://hl7.org/fhir/R4/graphql.html): `GET/POST /fhir/R4/<Type>/<id>/$graphql`
 * runs the query on that one resource: the query's fields are the resource's (`{ identifier { value } active }`).
 * The same yoga instance serves it, so authentication, errors, limits and directives are the system
 * endpoint's; only the schema (its query type is the resource's type) and the root value differ.
 */

/** The path of an instance-level `$graphql` (`$` may arrive percent-encoded). */
const INSTANCE_PATH = new RegExp(`^/fhir/R4/([A-Z][A-Za-z]+)/(${ID_SOURCE})/(?:\\$|%24)graphql$`);

/** The HTTP layer's route (Hono path syntax; a bare `$` after parameters would end Hono's regular expression). */
export const INSTANCE_GRAPHQL_ROUTE = `/fhir/R4/:type{[A-Z][A-Za-z]+}/:id{${ID_SOURCE}}/:operation{\\$graphql}`;

/** A URLPattern pathname for yoga's `graphqlEndpoint`: the alternative of INSTANCE_PATH. */
export const INSTANCE_ENDPOINT_PATTERN = `fhir/R4/[A-Z][A-Za-z]+/${ID_SOURCE}/(?:\\$|%24)graphql`;

export interface InstanceTarget {
  readonly resourceType: string;
  readonly id: string;
}

/** The resource an instance-level request is about, or undefined for the system endpoints. */
export function instanceTarget(request: Request | undefined): InstanceTarget | undefined {
  if (!request) return undefined;
  const match = INSTANCE_PATH.exec(pathnameOf(request.url));
  return match ? { resourceType: match[1], id: match[2] } : undefined;
}

/**
 * The path of an absolute URL as the request has it (`new URL` would also parse and normalise the
 * rest, twice per request; the router has matched the path already).
 */
function pathnameOf(url: string): string {
  const scheme = url.indexOf('://');
  const start = scheme === -1 ? 0 : url.indexOf('/', scheme + 3);
  if (start === -1) return '/';
  const end = url.search(/[?#]/);
  return end === -1 || end < start ? url.slice(start) : url.slice(start, end);
}

/**
 * Switches to the resource type's schema for instance-level requests and runs the query with the
 * resource (read through the request's repository, so project isolation and access policies hold)
 * as the root value. `schema` is the full schema the other requests use.
 */
export function useInstanceGraphQL(schema: GraphQLSchema): Plugin<GraphQLContext> {
  const schemas = new InstanceSchemas(schema);
  return {
    onEnveloped({ context, setSchema }) {
      const target = instanceTarget((context as Partial<GraphQLContext> | undefined)?.request);
      setSchema(target ? schemas.of(target.resourceType) : schema);
    },
    async onExecute({ args, setResultAndStopExecution }) {
      const context = args.contextValue;
      const target = instanceTarget(context.request);
      if (!target) return;
      try {
        const resource = await context.requestContext.repo.readResource(target.resourceType, target.id);
        // Remembered like any resource the request read: `#id` references find its contained resources.
        args.rootValue = context.loaders.remember(resource);
      } catch (error) {
        if (!(error instanceof OperationOutcomeError)) throw error;
        // No resource, no query: the read's status (404, 410, 403) is the response's.
        setResultAndStopExecution({ errors: [outcomeToGraphQLError(error, undefined, true)] });
      }
    },
  };
}

/**
 * One schema per resource type, built on first use from the full schema's own type objects (so the
 * resolvers are the same): its query type is the resource's object type, and every other type stays
 * available for fragments (`... on Patient` under `Reference.resource`).
 */
export class InstanceSchemas {
  private readonly byType = new Map<string, GraphQLSchema>();

  constructor(private readonly schema: GraphQLSchema) {}

  of(resourceType: string): GraphQLSchema {
    let instance = this.byType.get(resourceType);
    if (!instance) {
      const type = this.schema.getType(resourceType);
      if (!type || !isResourceObjectType(type)) {
        throw outcomeToGraphQLError(errors.notSupported(`No GraphQL type for resource type "${resourceType}"`), undefined, true);
      }
      const config = this.schema.toConfig();
      instance = new GraphQLSchema({
        description: `The ${resourceType} resource of an instance-level $graphql request.`,
        query: type,
        types: config.types,
        directives: config.directives,
        // Same types as the full schema, which was validated when it was built.
        assumeValid: true,
      });
      this.byType.set(resourceType, instance);
    }
    return instance;
  }
}

function isResourceObjectType(type: GraphQLNamedType): type is GraphQLObjectType {
  return isObjectType(type) && type.getInterfaces().some((candidate) => candidate.name === 'Resource');
}
