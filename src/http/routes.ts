import { ID_SOURCE } from '../fhir/ids.js';
import {
  createHandler,
  deleteHandler,
  historyHandler,
  patchHandler,
  readHandler,
  updateHandler,
  vreadHandler,
} from './fhir-handlers.js';
import { searchPostHandler, searchSystemHandler, searchTypeHandler } from './search-handlers.js';
import { healthcheckHandler, metadataHandler } from './server-handlers.js';
import { identityRoutes } from './auth/routes.js';
import { operationDefinitionReadHandler, operationHandler } from './operation-handlers.js';
import type { Route } from './route.js';

const FHIR = '/fhir/R4';
/** Resource type names start with an upper-case letter; this keeps `metadata` and `$op` apart. */
const TYPE = ':type{[A-Z][A-Za-z]+}';
const ID = `:id{${ID_SOURCE}}`;
/**
 * `$code` of an operation; `$graphql` at system and instance level is GraphQL's (mounted beside the
 * route table, src/http/app.ts).
 */
const OP = ':op{\\$[A-Za-z][A-Za-z0-9-]*}';
const NOT_GRAPHQL_OP = ':op{\\$(?!graphql$)[A-Za-z][A-Za-z0-9-]*}';

/** The one route table of the server. More specific paths come first. */
export const ROUTES: Route[] = [
  { method: 'GET', path: '/healthcheck', handler: healthcheckHandler, public: true },
  { method: 'GET', path: `${FHIR}/metadata`, handler: (c) => metadataHandler(c, ROUTES), public: true, interaction: { system: 'capabilities' } },
  // Identity: /oauth2/*, /auth/*, /.well-known/*, /admin/* (src/http/auth/routes.ts).
  ...identityRoutes,
  // Operations (SPEC 4.1): every level is routed; the OperationDefinition decides what exists and whether GET is allowed.
  { method: 'POST', path: `${FHIR}/${NOT_GRAPHQL_OP}`, handler: operationHandler('system') },
  { method: 'GET', path: `${FHIR}/${NOT_GRAPHQL_OP}`, handler: operationHandler('system') },
  { method: 'POST', path: `${FHIR}/${TYPE}/${OP}`, handler: operationHandler('type') },
  { method: 'GET', path: `${FHIR}/${TYPE}/${OP}`, handler: operationHandler('type') },
  { method: 'POST', path: `${FHIR}/${TYPE}/${ID}/${NOT_GRAPHQL_OP}`, handler: operationHandler('instance') },
  { method: 'GET', path: `${FHIR}/${TYPE}/${ID}/${NOT_GRAPHQL_OP}`, handler: operationHandler('instance') },
  // Built-in OperationDefinitions are served from the registry, stored ones by the normal read.
  { method: 'GET', path: `${FHIR}/:type{OperationDefinition}/${ID}`, handler: operationDefinitionReadHandler },
  { method: 'GET', path: `${FHIR}/${TYPE}/_history`, handler: historyHandler, interaction: { type: 'history-type' } },
  { method: 'GET', path: FHIR, handler: searchSystemHandler, interaction: { system: 'search-system' } },
  { method: 'GET', path: `${FHIR}/${TYPE}`, handler: searchTypeHandler, interaction: { type: 'search-type' } },
  { method: 'POST', path: `${FHIR}/${TYPE}/_search`, handler: searchPostHandler, interaction: { type: 'search-type' } },
  { method: 'POST', path: `${FHIR}/${TYPE}`, handler: createHandler, interaction: { type: 'create' } },
  { method: 'GET', path: `${FHIR}/${TYPE}/${ID}/_history`, handler: historyHandler, interaction: { type: 'history-instance' } },
  { method: 'GET', path: `${FHIR}/${TYPE}/${ID}/_history/:vid`, handler: vreadHandler, interaction: { type: 'vread' } },
  { method: 'GET', path: `${FHIR}/${TYPE}/${ID}`, handler: readHandler, interaction: { type: 'read' } },
  { method: 'PUT', path: `${FHIR}/${TYPE}/${ID}`, handler: updateHandler, interaction: { type: 'update' } },
  { method: 'PATCH', path: `${FHIR}/${TYPE}/${ID}`, handler: patchHandler, interaction: { type: 'patch' } },
  { method: 'DELETE', path: `${FHIR}/${TYPE}/${ID}`, handler: deleteHandler, interaction: { type: 'delete' } },
];
