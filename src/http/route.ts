import type { Context } from 'hono';
import type { RequestContext, Services } from '../operations/context.js';
import type { Admission } from './admission.js';
import type { KnownCaller } from '../auth/authenticate.js';
import type { MetricsExposition } from './metrics/server-metrics.js';

export type AppEnv = {
  Variables: {
    ctx: RequestContext;
    services: Services;
    requestId: string;
    /** This process's admission control, for the health check to report its load. */
    admission: Admission;
    /** The handler put X-Request-Id on its response itself. */
    requestIdSent?: boolean;
    /** The route pattern a handler matched itself (the FHIR router's), for the request metrics. */
    route?: string;
    /** The identity admission found for the request's bearer token, which authentication then takes (auth/authenticate.ts knownCaller). */
    knownCaller?: KnownCaller;
    /** What `GET /metrics` answers (src/http/metrics/endpoint.ts). */
    metricsExposition?: MetricsExposition;
  };
};
export type HonoContext = Context<AppEnv>;

/** An HTTP route outside the FHIR router: health, identity and admin endpoints. */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  handler: (c: HonoContext) => Promise<Response>;
  /** Served without authentication (health, well-known documents, token endpoints). */
  public?: boolean;
}
