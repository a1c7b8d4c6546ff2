import type { Resolvers } from '../generated/graphql.js';

/**
 * Resolvers of the FHIR part of the schema (schema/fhir-*.graphql): reads, searches, connections,
 * mutations, Reference.resource and reverse reference lists. Built from the definitions once at start.
 */
export function resourceResolvers(): Resolvers {
  return {};
}
