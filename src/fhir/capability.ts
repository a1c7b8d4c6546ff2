import type { Config } from '../config.js';
import type { Route, SystemInteraction, TypeInteraction } from '../http/routes.js';
import { getResourceTypes } from './definitions.js';
import type { Resource } from './types.js';

export const SERVER_VERSION = '0.1.0';

/**
 * The CapabilityStatement, generated from the route table so it cannot drift from what the
 * server really serves. Built once per process.
 */
export function buildCapabilityStatement(config: Config, routes: readonly Route[]): Resource {
  const typeInteractions = new Set<TypeInteraction>();
  const systemInteractions = new Set<SystemInteraction>();
  for (const route of routes) {
    if (!route.interaction) continue;
    if ('type' in route.interaction) typeInteractions.add(route.interaction.type);
    else systemInteractions.add(route.interaction.system);
  }
  const interactions = [...typeInteractions].map((code) => ({ code }));
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: new Date().toISOString(),
    publisher: 'Flint',
    kind: 'instance',
    software: { name: 'Flint', version: SERVER_VERSION },
    implementation: { description: 'Flint FHIR R4 server', url: config.fhirBaseUrl },
    fhirVersion: '4.0.1',
    format: ['application/fhir+json', 'json'],
    patchFormat: typeInteractions.has('patch') ? ['application/json-patch+json'] : undefined,
    rest: [
      {
        mode: 'server',
        resource: getResourceTypes().map((type) => ({
          type,
          interaction: interactions,
          versioning: 'versioned-update',
          readHistory: true,
          updateCreate: typeInteractions.has('update'),
          conditionalCreate: false,
          conditionalUpdate: false,
          conditionalDelete: 'not-supported',
        })),
        interaction: [...systemInteractions].filter((code) => code !== 'capabilities').map((code) => ({ code })),
      },
    ],
  };
}
