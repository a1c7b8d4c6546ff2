import { SERVER_VERSION } from '../fhir/software.js';
import type { Resolvers } from '../generated/graphql.js';
import { JSONScalar } from './scalars.js';

/** Thin resolvers: decode the arguments, call the request context's services, return their result. */
export const resolvers: Resolvers = {
  JSON: JSONScalar,
  Query: {
    health: async (_parent, _args, { requestContext }) => ({
      ok: await requestContext.databaseHealth.healthy(),
      database: requestContext.databaseHealth.kind,
      version: SERVER_VERSION,
    }),
    resource: (_parent, { resourceType, id }, { requestContext }) =>
      requestContext.repo.readResource(resourceType, id),
    me: (_parent, _args, { requestContext: { identity } }) => ({
      membership: identity.membershipId ? `ProjectMembership/${identity.membershipId}` : undefined,
      subject: identity.subject,
      clientId: identity.clientId,
      scope: identity.scope,
      superAdmin: identity.superAdmin,
      projectAdmin: identity.projectAdmin ?? false,
    }),
  },
  Me: {
    // As the caller reads it: null for a member who is not a project admin, as for a hidden profile.
    project: (_me, _args, { requestContext, loaders }) => loaders.reference(`Project/${requestContext.identity.projectId}`),
    profile: async (_me, _args, { requestContext, loaders }) => {
      const [resourceType, id] = requestContext.identity.profile?.split('/') ?? [];
      if (!resourceType || !id) return null;
      return loaders.reference(`${resourceType}/${id}`);
    },
  },
};
