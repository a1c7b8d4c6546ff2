import { TrieRouter } from 'hono/router/trie-router';
import { assertRouteAccess } from '../access/type-access.js';
import { errors } from '../fhir/outcome.js';
import { notFound } from './not-found.js';
import { RouteShapes } from './route-shapes.js';
import type { RequestContext } from '../operations/context.js';
import { assertAnswerAcceptable } from './negotiation.js';
import { errorResponse } from './responses.js';
import { fhirRoutes } from './routes.js';
import type { EntryRouter, FhirMethod, FhirRequest, FhirResponse, FhirRoute, PublicCaller, RouteMatch, RouteParams } from './types.js';
import type { RouteAccess } from '../access/type-access.js';

/**
 * The transport-free FHIR router: a plain request and the caller's context in, a plain answer out.
 * Matching is Hono's trie router (a well-kept matcher with per-segment patterns), over our table.
 */
export class FhirRouter implements EntryRouter {
  private readonly matcher = new TrieRouter<FhirRoute>();
  private readonly shapes: RouteShapes;
  readonly routes: readonly FhirRoute[];

  /** `table` gets the router itself: the Bundle routes run their entries through it. */
  constructor(table: (router: EntryRouter) => readonly FhirRoute[]) {
    this.routes = table(this);
    for (const route of this.routes) this.matcher.add(route.method, `/${route.path}`, route);
    this.shapes = new RouteShapes(this.routes);
  }

  /** The first route of the table that serves the method and path (HEAD is served as GET). */
  match(method: FhirMethod, path: string): RouteMatch | undefined {
    const served = method === 'HEAD' ? 'GET' : method;
    const remembered = this.shapes.lookup(served, path);
    if (remembered !== undefined) return remembered ?? undefined;
    const [matches] = this.matcher.match(served, `/${path}`) as [[FhirRoute, Record<string, string>][]];
    const first = matches[0];
    const found = first ? { route: first[0], params: first[1] } : undefined;
    this.shapes.remember(served, path, found);
    return found;
  }

  /** Runs a request as the caller; every failure becomes its OperationOutcome answer. */
  async handle(req: FhirRequest, ctx: RequestContext): Promise<FhirResponse> {
    try {
      return await this.dispatch(req, { config: ctx.config, database: ctx.database, ctx });
    } catch (error) {
      const response = errorResponse(error);
      if (response.status >= 500) ctx.log.error({ err: error }, 'request failed');
      return response;
    }
  }

  /**
   * Runs a request; failures are thrown as OperationOutcomeErrors (as a rejected promise, never
   * synchronously). `caller.ctx` is absent for a request without a token, which only public routes
   * serve. Not an async function: one that returns the handler's promise waits two more turns of
   * the microtask queue for it.
   */
  dispatch(req: FhirRequest, caller: PublicCaller, found?: RouteMatch): Promise<FhirResponse> {
    try {
      return this.run(req, caller, found ?? this.match(req.method, req.path));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private run(req: FhirRequest, caller: PublicCaller, found: RouteMatch | undefined): Promise<FhirResponse> {
    if (!found) throw notFound(req.method, req.path);
    const { route, params } = found;
    if (route.public) {
      if (!route.ownAnswerTypes) assertAnswerAcceptable(req);
      return route.handler(req, params, caller);
    }
    if (!caller.ctx) throw errors.unauthorized('Authentication required: send Authorization: Bearer <access token>');
    assertRouteAccess(caller.ctx.identity, req.path, req.query, routeAccess(route, req, params));
    if (!route.ownAnswerTypes) assertAnswerAcceptable(req);
    return route.handler(req, params, caller.ctx);
  }
}

/** The server's one FHIR router. */
export const fhirRouter = new FhirRouter(fhirRoutes);

/** The interaction a request makes on its route, for SMART scopes (access/type-access.ts). */
function routeAccess(route: FhirRoute, req: FhirRequest, params: RouteParams): RouteAccess {
  if (!route.interaction || !('type' in route.interaction)) return { interaction: route.interaction?.system };
  const conditional = route.conditional === true && (req.method === 'POST' ? req.header('if-none-exist') !== undefined : params.id === undefined);
  return { interaction: route.interaction.type, conditional };
}
