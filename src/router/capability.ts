import { SERVER_NAME, SERVER_VERSION } from '../fhir/software.js';
import type { Config } from '../config.js';
import type { Identity } from '../identity/identity.js';
import type { SqlExecutor } from '../db/database.js';
import type { FhirRoute, SystemInteraction, TypeInteraction } from './types.js';
import { searchableParameters } from '../search/query/conditions.js';
import { getResourceTypes } from '../fhir/definitions.js';
import type {
  CapabilityStatement,
  CapabilityStatementRestResource,
  CapabilityStatementRestResourceOperation,
  CapabilityStatementRestResourceSearchParam,
  CapabilityStatementRestSecurity,
} from '../fhir/resources.js';
import { listsResourceType } from '../operations/definition.js';
import { listOperations } from '../operations/registry.js';
import { NO_PROJECT_PARAMETERS, projectParameters, type ProjectParameters } from '../indexing/parameters.js';


/**
 * The CapabilityStatement, generated from the route table so it cannot drift from what the
 * server really serves. Built once per process.
 */
export function buildCapabilityStatement(config: Config, routes: readonly FhirRoute[]): CapabilityStatement {
  const typeInteractions = new Set<TypeInteraction>();
  const systemInteractions = new Set<SystemInteraction>();
  const conditional = new Set<TypeInteraction>();
  for (const route of routes) {
    if (!route.interaction) continue;
    if ('type' in route.interaction) {
      typeInteractions.add(route.interaction.type);
      if (route.conditional) conditional.add(route.interaction.type);
    } else systemInteractions.add(route.interaction.system);
  }
  const interactions = [...typeInteractions].map((code) => ({ code }));
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: new Date().toISOString(),
    publisher: 'Flint',
    kind: 'instance',
    software: { name: SERVER_NAME, version: SERVER_VERSION },
    implementation: { description: 'Flint FHIR R4 server', url: config.fhirBaseUrl },
    fhirVersion: '4.0.1',
    format: ['application/fhir+json', 'json'],
    patchFormat: typeInteractions.has('patch') ? ['application/json-patch+json'] : undefined,
    rest: [
      {
        mode: 'server',
        security: securityOf(config),
        resource: getResourceTypes().map((type) => ({
          type,
          interaction: interactions,
          versioning: 'versioned-update',
          readHistory: true,
          conditionalRead: 'full-support',
          updateCreate: typeInteractions.has('update'),
          conditionalCreate: conditional.has('create'),
          conditionalUpdate: conditional.has('update'),
          conditionalDelete: conditional.has('delete') ? 'single' : 'not-supported',
          searchParam: typeInteractions.has('search-type') ? searchParamsOf(type) : undefined,
          ...operationsOf(type),
        })),
        interaction: [...systemInteractions].filter((code) => code !== 'capabilities').map((code) => ({ code })),
        operation: listOperations()
          .filter((op) => op.definition.system)
          .map((op) => ({ name: op.definition.code, definition: op.definition.url })),
      },
    ],
  };
}

/** The operations available on a resource type (type or instance level), from the operation registry. */
function operationsOf(type: string): { operation?: CapabilityStatementRestResourceOperation[] } {
  const operations = listOperations()
    .filter((op) => (op.definition.type || op.definition.instance) && listsResourceType(op.definition, type))
    .map((op) => ({ name: op.definition.code, definition: op.definition.url }));
  return operations.length > 0 ? { operation: operations } : {};
}

/** The search parameters the search service answers for a type. */
function searchParamsOf(type: string): CapabilityStatementRestResourceSearchParam[] {
  return searchableParameters(type).map((param) => ({ name: param.code, definition: param.url, type: param.type }));
}

/** Statements with a project's own parameters, by the parameters object (replaced when they change) and the public text. */
const projectStatements = new WeakMap<ProjectParameters, { base: string; text: string }>();

/**
 * The CapabilityStatement as the caller's project sees it: `base` (the public statement, as JSON
 * text) plus, under each base type, the project's own SearchParameters (src/indexing/parameters.ts:
 * the ones its searches accept), with `definition` = the SearchParameter's url. A project without
 * any gets `base` itself. Built once per version of the project's definitions.
 */
export async function projectCapabilityText(db: SqlExecutor, identity: Identity, base: string): Promise<string> {
  const parameters = await projectParameters(db, identity.projectId);
  if (parameters === NO_PROJECT_PARAMETERS) return base;
  const known = projectStatements.get(parameters);
  if (known?.base === base) return known.text;
  const statement = JSON.parse(base) as CapabilityStatement;
  const resources = new Map<string, CapabilityStatementRestResource>();
  for (const resource of statement.rest?.[0]?.resource ?? []) resources.set(String(resource.type), resource);
  for (const { resourceType, definition } of parameters.definitions()) {
    const resource = resources.get(resourceType);
    if (!resource?.searchParam) continue;
    resource.searchParam.push({
      name: definition.code,
      ...(definition.url ? { definition: definition.url } : {}),
      type: definition.type,
      ...(definition.description ? { documentation: definition.description } : {}),
    });
  }
  const text = JSON.stringify(statement);
  projectStatements.set(parameters, { base, text });
  return text;
}

/** How clients authenticate (SMART on FHIR OAuth URIs extension). */
function securityOf(config: Config): CapabilityStatementRestSecurity {
  const base = config.baseUrl;
  return {
    cors: true,
    service: [
      {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' }],
        text: 'OAuth2 bearer tokens (ES256 JWTs): client credentials, password, authorization code with PKCE, refresh token, token exchange',
      },
    ],
    extension: [
      {
        url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
        extension: [
          { url: 'token', valueUri: `${base}oauth2/token` },
          { url: 'authorize', valueUri: `${base}oauth2/authorize` },
          { url: 'revoke', valueUri: `${base}oauth2/logout` },
        ],
      },
    ],
    description:
      'Send Authorization: Bearer <access token> on every request except metadata, well-known documents and health. ' +
      'SMART App Launch 2.0 and 1.0 scopes (patient/, user/, system/; v2 cruds letters, v1 read/write/*, granular ?param=value) ' +
      'narrow what the membership and its AccessPolicy allow; a token without resource scopes keeps its membership access. ' +
      `Discovery: ${base}.well-known/smart-configuration`,
  };
}
