import { healthcheckHandler } from './server-handlers.js';
import { landingPageHandler } from './landing-page.js';
import { metricsHandler } from './metrics/endpoint.js';
import { identityRoutes } from './auth/routes.js';
import type { Route } from './route.js';

/**
 * The HTTP routes beside the FHIR API: the landing page, health, metrics and the identity endpoints. Everything under
 * /fhir/R4 is the FHIR router's (src/router/routes.ts), mounted by src/http/app.ts.
 */
export const ROUTES: Route[] = [
  { method: 'GET', path: '/', handler: landingPageHandler, public: true },
  { method: 'GET', path: '/healthcheck', handler: healthcheckHandler, public: true },
  // Its own bearer token (METRICS_TOKEN), not a user's.
  { method: 'GET', path: '/metrics', handler: metricsHandler, public: true },
  // Identity: /oauth2/*, /auth/*, /.well-known/*, /admin/* (src/http/auth/routes.ts).
  ...identityRoutes,
];
