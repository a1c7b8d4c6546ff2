import type { Resolvers } from '../generated/graphql.js';

/** One field per operation of the registry (schema/fhir-operations.graphql), calling its handler. */
export function operationResolvers(): Resolvers {
  return {};
}
