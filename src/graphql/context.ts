import type { GraphQLResolveInfo } from 'graphql';
import type { YogaInitialContext } from 'graphql-yoga';
import type { RequestContext } from '../operations/context.js';
import type { Loaders } from './loaders.js';

/**
 * What every resolver receives. Yoga's own fields (`request` is the fetch Request, `params` the
 * GraphQL parameters) stay as they are; our per-request context sits beside them, so resolvers call
 * the same services as the REST handlers: `context.requestContext.repo.readResource(...)`.
 */
export interface GraphQLContext extends YogaInitialContext {
  readonly requestContext: RequestContext;
  /** Batching loaders of this request (src/graphql/loaders.ts). */
  readonly loaders: Loaders;
}

/** A resolver of one generated field: the generic resolvers make one per resource type. */
export type FieldResolver = (parent: never, args: never, context: GraphQLContext, info: GraphQLResolveInfo) => unknown;
