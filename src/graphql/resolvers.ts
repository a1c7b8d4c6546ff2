import { SERVER_VERSION } from '../fhir/capability.js';
import type { Resolvers } from '../generated/graphql.js';
import { JSONScalar } from './scalars.js';

/** Thin resolvers: decode the arguments, call the request context's services, return their result. */
export const resolvers: Resolvers = {
  JSON: JSONScalar,
  Query: {
    health: async (_parent, _args, { requestContext }) => ({
      ok: await requestContext.db.healthy(),
      database: requestContext.db.kind,
      version: SERVER_VERSION,
    }),
    resource: (_parent, { resourceType, id }, { requestContext }) =>
      requestContext.repo.readResource(resourceType, id),
  },
};
