import type { Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import { fhirRouter } from '../router/router.js';
import { valueBody } from '../router/request-body.js';
import { bodyResource } from '../router/responses.js';
import type { FhirMethod, FhirResponse } from '../router/types.js';

/**
 * GraphQL's mutations and operation fields are FHIR interactions: they go through the one FHIR
 * router with the request's context, as REST and Bundle entries do. Failures are thrown as the
 * router's OperationOutcomeErrors, which the GraphQL error mapping turns into errors with outcomes.
 */
export function routeAs(
  ctx: RequestContext,
  method: FhirMethod,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<FhirResponse> {
  const all: Record<string, string | undefined> = { ...headers, ...(body !== undefined ? { 'content-type': 'application/fhir+json' } : {}) };
  return fhirRouter.dispatch(
    { method, path, query: new URLSearchParams(), header: (name) => all[name], body: body === undefined ? undefined : valueBody(body) },
    { config: ctx.config, database: ctx.database, ctx },
  );
}

/** The resource the router answered with (every interaction GraphQL calls answers with one). */
export function answerOf(response: FhirResponse): Resource {
  const resource = bodyResource(response);
  if (!resource) throw new Error(`The FHIR router answered ${response.status} without a resource`);
  return resource;
}
