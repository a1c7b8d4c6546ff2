import type { EnumModel } from './enums.js';
import { PRIMITIVE_ELEMENT_TYPE, type FhirModel, type FieldModel, type ObjectModel } from './model.js';
import { referenceParamEnumName } from './references.js';
import { block, enumBlock, sdlFile, type SdlArgument, type SdlField } from './sdl.js';

/**
 * schema/fhir-types.graphql: `interface Resource`, the enums, and one object type per resource,
 * data type and backbone element. Field names are the FHIR JSON property names, so the default
 * resolver reads stored JSON as it is.
 */

export interface TypesInput {
  model: FhirModel;
  /** ResourceType and the reference-parameter enums, in file order. */
  enums: readonly EnumModel[];
  /** target type → source types with a reference search parameter that can point at it. */
  reverseSources: ReadonlyMap<string, readonly string[]>;
}

export const RESOURCE_TYPE_ENUM = 'ResourceType';

const RESOURCE_INTERFACE_FIELDS: readonly SdlField[] = [
  { name: 'resourceType', type: 'String' },
  { name: 'id', type: 'ID', description: 'Logical id of this artifact' },
  { name: '_id', type: PRIMITIVE_ELEMENT_TYPE },
  { name: 'meta', type: 'Meta', description: 'Metadata about the resource' },
  { name: 'implicitRules', type: 'String', description: 'A set of rules under which this content was created' },
  { name: '_implicitRules', type: PRIMITIVE_ELEMENT_TYPE },
  { name: 'language', type: 'String', description: 'Language of the resource content' },
  { name: '_language', type: PRIMITIVE_ELEMENT_TYPE },
];

/** Arguments of every repeating element, applied after reading (see list-fields.ts). */
const LIST_ARGS: readonly SdlArgument[] = [
  { name: 'fhirpath', type: 'String' },
  { name: '_count', type: 'Int' },
  { name: '_offset', type: 'Int' },
];
const EXTENSION_LIST_ARGS: readonly SdlArgument[] = [{ name: 'url', type: 'String' }, ...LIST_ARGS];
const EXTENSION_FIELDS = new Set(['extension', 'modifierExtension']);

/**
 * After `_reference`: what the top-level `SList` takes, except its typed search parameters and
 * `_cursor` (a reverse list has no paging links to pass back). Search parameters go in `_params`:
 * as typed arguments they would be about 140,000 arguments over the 5,700 reverse fields, which
 * makes the schema several times slower to build and the introspection answer several times larger
 * (measured: see bench/RESULTS.md).
 */
const REVERSE_ARGS: readonly SdlArgument[] = [
  { name: '_params', type: '[SearchParam!]' },
  { name: '_count', type: 'Int' },
  { name: '_offset', type: 'Int' },
  { name: '_sort', type: 'String' },
];

/**
 * A coded element is `String` whatever its binding, as on FHIR's GraphQL page and in Medplum's schema:
 * it reads back as its FHIR code (`entered-in-error`) and takes one as a string; the validator checks
 * the binding on write. The TypeScript types still carry the codes (codegen.ts, codeFields).
 */
export function outputField(field: FieldModel): SdlField {
  const named = field.kind === 'resource' ? 'Resource' : field.type;
  // `_given` takes no list arguments: its items line up by index with those of `given`. No description
  // either (thousands of fields): the Element type says what they are.
  if (field.primitiveExtension) return { name: field.name, type: field.list ? `[${named}]` : named };
  if (!field.list) return { name: field.name, type: named, description: field.description };
  const args = EXTENSION_FIELDS.has(field.name) && field.type === 'Extension' ? EXTENSION_LIST_ARGS : LIST_ARGS;
  return { name: field.name, type: `[${named}]`, args, description: field.description };
}

/** `Patient.ObservationList`: the reverse-reference field of source type S on its targets. */
export function reverseFieldName(source: string): string {
  return `${source}List`;
}

/** `Reference.resource`: the referenced resource, resolved in GraphQL only (FHIR JSON has no such field). */
export const REFERENCE_RESOURCE_FIELD = 'resource';

function reverseFields(sources: readonly string[]): SdlField[] {
  return sources.map((source) => ({
    name: reverseFieldName(source),
    args: [{ name: '_reference', type: `${referenceParamEnumName(source)}!` }, ...REVERSE_ARGS],
    type: `[${source}]`,
  }));
}

function objectType(object: ObjectModel, input: TypesInput): string {
  const fields = object.fields.map(outputField);
  if (object.kind === 'resource') {
    fields.unshift({ name: 'resourceType', type: 'String' });
    fields.push(...reverseFields(input.reverseSources.get(object.name) ?? []));
    return block(`type ${object.name} implements Resource`, fields, object.description);
  }
  if (object.name === 'Reference') {
    fields.push({
      name: REFERENCE_RESOURCE_FIELD,
      args: [
        { name: 'type', type: RESOURCE_TYPE_ENUM },
        { name: 'optional', type: 'Boolean' },
      ],
      type: 'Resource',
      description:
        'The resource this reference points at: null when `type` is given and the target is of another type; an error when it cannot be resolved, unless `optional: true` (then null).',
    });
  }
  return block(`type ${object.name}`, fields, object.description);
}

export function generateTypesSdl(input: TypesInput): string {
  return sdlFile([
    block('interface Resource', RESOURCE_INTERFACE_FIELDS, 'Any FHIR resource; resolved to its type by `resourceType`.'),
    ...input.enums.map((model) => enumBlock(model.name, model.values.map((value) => value.name), model.description)),
    ...input.model.objects.map((object) => objectType(object, input)),
  ]);
}
