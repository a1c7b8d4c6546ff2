import { ID_SOURCE } from '../../fhir/ids.js';
import type { Route } from '../route.js';
import { inviteHandler } from './invite-handler.js';
import {
  authorizeHandler,
  jwksHandler,
  loginHandler,
  logoutHandler,
  openidConfigurationHandler,
  smartConfigurationHandler,
  userinfoHandler,
} from './endpoints.js';
import { meHandler } from './me-handler.js';
import { newPatientHandler, newProjectHandler, newUserHandler } from './sign-up-handlers.js';
import { tokenHandler } from './token-endpoint.js';

/**
 * The identity routes, spliced into the HTTP routes beside the FHIR API (src/http/routes.ts).
 * Public ones do their own authentication (token, login, authorize) or need none (discovery
 * documents); `/oauth2/userinfo` checks its bearer itself because it also accepts external IDP
 * tokens.
 */
export const identityRoutes: Route[] = [
  { method: 'GET', path: '/.well-known/jwks.json', handler: jwksHandler, public: true },
  { method: 'GET', path: '/.well-known/openid-configuration', handler: openidConfigurationHandler, public: true },
  { method: 'GET', path: '/.well-known/smart-configuration', handler: smartConfigurationHandler, public: true },
  { method: 'GET', path: '/fhir/R4/.well-known/smart-configuration', handler: smartConfigurationHandler, public: true },
  { method: 'POST', path: '/oauth2/token', handler: tokenHandler, public: true },
  { method: 'GET', path: '/oauth2/authorize', handler: authorizeHandler, public: true },
  { method: 'POST', path: '/oauth2/authorize', handler: authorizeHandler, public: true },
  { method: 'GET', path: '/oauth2/userinfo', handler: userinfoHandler, public: true },
  { method: 'POST', path: '/oauth2/userinfo', handler: userinfoHandler, public: true },
  { method: 'POST', path: '/oauth2/logout', handler: logoutHandler },
  { method: 'GET', path: '/oauth2/logout', handler: logoutHandler },
  { method: 'POST', path: '/auth/login', handler: loginHandler, public: true },
  { method: 'GET', path: '/auth/me', handler: meHandler },
  { method: 'POST', path: '/auth/newuser', handler: newUserHandler, public: true },
  { method: 'POST', path: '/auth/newproject', handler: newProjectHandler, public: true },
  { method: 'POST', path: '/auth/newpatient', handler: newPatientHandler, public: true },
  { method: 'POST', path: `/admin/projects/:projectId{${ID_SOURCE}}/invite`, handler: inviteHandler },
];
