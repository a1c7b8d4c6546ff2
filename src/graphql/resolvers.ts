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
    // Through the caller's repository: the same read rights as `Project(id:)` would have.
    project: (_me, _args, { requestContext }) => requestContext.repo.readResource('Project', requestContext.identity.projectId),
    profile: async (_me, _args, { requestContext, loaders }) => {
      const [resourceType, id] = requestContext.identity.profile?.split('/') ?? [];
      if (!resourceType || !id) return null;
      return loaders.reference(`${resourceType}/${id}`);
    },
  },
};
