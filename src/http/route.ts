import type { Context } from 'hono';
import type { RequestContext, Services } from '../operations/context.js';

export type AppEnv = {
  Variables: {
    ctx: RequestContext;
    services: Services;
    requestId: string;
    /** The handler put X-Request-Id on its response itself. */
    requestIdSent?: boolean;
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
