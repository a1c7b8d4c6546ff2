import { ID_SOURCE } from '../fhir/ids.js';
import { createHandler, deleteHandler, patchHandler, readHandler, updateHandler, vreadHandler } from './handlers/resources.js';
import { conditionalDeleteHandler, conditionalPatchHandler, conditionalUpdateHandler } from './handlers/conditional.js';
import { historyHandler } from './handlers/history.js';
import { searchPostHandler, searchSystemHandler, searchTypeHandler } from './handlers/search.js';
import { metadataHandler } from './handlers/metadata.js';
import { versionsHandler } from './handlers/versions.js';
import { operationDefinitionReadHandler, operationHandler } from './handlers/operations.js';
import { bundleHandler } from './bundles/handler.js';
import { csvHandler } from './handlers/csv.js';
import { botExecuteHandler } from './handlers/bots.js';
import { exportDeleteHandler, exportFileHandler, exportStatusHandler } from './handlers/bulk-export.js';
import type { EntryRouter, FhirRoute } from './types.js';

/** Resource type names start with an upper-case letter; this keeps `metadata` and `$op` apart. */
const TYPE = ':type{[A-Z][A-Za-z]+}';
const ID = `:id{${ID_SOURCE}}`;
const OP = ':op{\\$[A-Za-z][A-Za-z0-9-]*}';

/**
 * The one table of FHIR interactions, below the FHIR base. REST mounts it at /fhir/R4, Bundle
 * entries and GraphQL run through it, and the CapabilityStatement is generated from it. More
 * specific paths come first. `router` runs the entries of batch and transaction Bundles.
 */
export function fhirRoutes(router: EntryRouter): FhirRoute[] {
  const operation = (method: 'GET' | 'POST', path: string, level: 'system' | 'type' | 'instance'): FhirRoute => ({
    method,
    path,
    handler: operationHandler(level),
    operationLevel: level,
  });
  const routes: FhirRoute[] = [
    { method: 'GET', path: 'metadata', public: true, handler: metadataHandler(() => routes), interaction: { system: 'capabilities' } },
    // Public like metadata, and before the operation routes, which would look for an OperationDefinition.
    { method: 'GET', path: '$versions', public: true, handler: versionsHandler, ownAnswerTypes: true },
    // A search answered as CSV, streamed: not an operation's Parameters, so a route of its own.
    { method: 'GET', path: `${TYPE}/:csv{\\$csv}`, handler: csvHandler, ownAnswerTypes: true },
    // Bot/$execute takes and answers any content type (JSON, text, HL7 v2, form data), so it is routed apart from the operation framework.
    { method: 'POST', path: `:type{Bot}/${ID}/:op{\\$execute}`, handler: botExecuteHandler, refusedInTransaction: true, ownAnswerTypes: true },
    { method: 'GET', path: `:type{Bot}/${ID}/:op{\\$execute}`, handler: botExecuteHandler, refusedInTransaction: true, ownAnswerTypes: true },
    { method: 'POST', path: ':type{Bot}/:op{\\$execute}', handler: botExecuteHandler, refusedInTransaction: true, ownAnswerTypes: true },
    { method: 'GET', path: ':type{Bot}/:op{\\$execute}', handler: botExecuteHandler, refusedInTransaction: true, ownAnswerTypes: true },
    // A bulk data export's status URL and files (the Bulk Data IG's endpoints, not operations).
    { method: 'GET', path: `$export-status/${ID}`, handler: exportStatusHandler, ownAnswerTypes: true },
    { method: 'DELETE', path: `$export-status/${ID}`, handler: exportDeleteHandler, ownAnswerTypes: true },
    { method: 'GET', path: `$export-status/${ID}/:file{[A-Za-z]+-[0-9]+\\.ndjson}`, handler: exportFileHandler, ownAnswerTypes: true },
    // Operations (SPEC 4.1): every level is routed; the OperationDefinition decides what exists and whether GET is allowed.
    operation('POST', OP, 'system'),
    operation('GET', OP, 'system'),
    operation('POST', `${TYPE}/${OP}`, 'type'),
    operation('GET', `${TYPE}/${OP}`, 'type'),
    operation('POST', `${TYPE}/${ID}/${OP}`, 'instance'),
    operation('GET', `${TYPE}/${ID}/${OP}`, 'instance'),
    // Built-in OperationDefinitions are served from the registry, stored ones by the normal read.
    { method: 'GET', path: `:type{OperationDefinition}/${ID}`, handler: operationDefinitionReadHandler, ownAnswerTypes: true },
    { method: 'POST', path: '', handler: bundleHandler(router), interaction: { system: 'transaction' }, refusedInTransaction: true },
    { method: 'POST', path: '', handler: bundleHandler(router), interaction: { system: 'batch' }, refusedInTransaction: true },
    { method: 'GET', path: '_history', handler: historyHandler, interaction: { system: 'history-system' } },
    { method: 'GET', path: `${TYPE}/_history`, handler: historyHandler, interaction: { type: 'history-type' } },
    { method: 'GET', path: '', handler: searchSystemHandler, interaction: { system: 'search-system' } },
    { method: 'GET', path: TYPE, handler: searchTypeHandler, interaction: { type: 'search-type' } },
    { method: 'POST', path: `${TYPE}/_search`, handler: searchPostHandler, interaction: { type: 'search-type' } },
    { method: 'POST', path: TYPE, handler: createHandler, interaction: { type: 'create' }, conditional: true },
    { method: 'PUT', path: TYPE, handler: conditionalUpdateHandler, interaction: { type: 'update' }, conditional: true },
    { method: 'PATCH', path: TYPE, handler: conditionalPatchHandler, interaction: { type: 'patch' }, conditional: true },
    { method: 'DELETE', path: TYPE, handler: conditionalDeleteHandler, interaction: { type: 'delete' }, conditional: true },
    { method: 'GET', path: `${TYPE}/${ID}/_history`, handler: historyHandler, interaction: { type: 'history-instance' } },
    { method: 'GET', path: `${TYPE}/${ID}/_history/:vid`, handler: vreadHandler, interaction: { type: 'vread' }, ownAnswerTypes: true },
    { method: 'GET', path: `${TYPE}/${ID}`, handler: readHandler, interaction: { type: 'read' }, ownAnswerTypes: true },
    { method: 'PUT', path: `${TYPE}/${ID}`, handler: updateHandler, interaction: { type: 'update' } },
    { method: 'PATCH', path: `${TYPE}/${ID}`, handler: patchHandler, interaction: { type: 'patch' } },
    { method: 'DELETE', path: `${TYPE}/${ID}`, handler: deleteHandler, interaction: { type: 'delete' } },
  ];
  return routes;
}
