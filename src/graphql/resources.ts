import { createResolver, deleteResolver, updateResolver } from './mutations.js';
import { getResourceTypes } from '../fhir/definitions.js';
import type { Resource } from '../fhir/types.js';
import type { Resolvers } from '../generated/graphql.js';
import type { FieldResolver, GraphQLContext } from './context.js';
import { referenceResolver } from './reference-fields.js';
import { reverseListResolver, reverseReferences } from './reverse-lists.js';
import type { Args } from './search-arguments.js';
import { connectionResolver, listResolver, readResolver } from './search-fields.js';

/**
 * Resolvers of the FHIR part of the schema (schema/fhir-*.graphql): reads, searches, connections,
 * mutations, Reference.resource and reverse reference lists. Built from the definitions once at start.
 * Each resolver decodes its arguments and calls the service REST calls for the same interaction
 * (the request's GuardedRepository, or the search service), so every rule holds in both.
 */
export function resourceResolvers(): Resolvers {
  const query: ResolverMap = {};
  const mutation: ResolverMap = {};
  const types: Record<string, ResolverMap> = {};
  for (const type of getResourceTypes()) {
    query[type] = readResolver(type);
    query[`${type}List`] = listResolver(type);
    query[`${type}Connection`] = connectionResolver(type);
    mutation[`${type}Create`] = createResolver(type);
    mutation[`${type}Update`] = updateResolver(type);
    mutation[`${type}Delete`] = deleteResolver(type);
  }
  for (const [target, sources] of reverseReferences()) {
    const fields: ResolverMap = (types[target] ??= {});
    for (const source of sources) fields[`${source}List`] = reverseListResolver(source);
  }
  const resolvers = {
    ...types,
    Query: query,
    Mutation: mutation,
    Resource: { __resolveType: (value: Resource) => value.resourceType },
    Reference: { resource: referenceResolver },
    Binary: { ...types.Binary, data: binaryDataResolver },
  };
  // Built from the definitions at start, so its shape is not known to the type checker.
  return resolvers as unknown as Resolvers;
}

type ResolverMap = Record<string, FieldResolver>;

/** Binary bytes live beside the JSON: read them when the client asks for `data`, as REST does for JSON reads. */
async function binaryDataResolver(parent: Resource, _args: Args, context: GraphQLContext): Promise<string | null> {
  if (typeof parent.data === 'string') return parent.data;
  const meta = parent.meta;
  if (!parent.id || !meta?.project || !meta.versionId) return null;
  const data = await context.requestContext.repo.readBinaryData({
    resourceType: 'Binary',
    id: parent.id,
    projectId: meta.project,
    versionId: meta.versionId,
    lastUpdated: meta.lastUpdated ?? '',
    deleted: false,
    text: null,
  });
  return data ? Buffer.from(data).toString('base64') : null;
}
