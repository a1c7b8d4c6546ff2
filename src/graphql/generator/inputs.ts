import type { FhirModel, FieldModel, ObjectModel } from './model.js';
import { block, sdlFile, type SdlField } from './sdl.js';

/**
 * schema/fhir-inputs.graphql: `<Name>Input` for every resource, data type and backbone element, with
 * the same FHIR JSON property names; every field optional (the server validates as REST does), no
 * list arguments, whole resources (`contained`, `Bundle.entry.resource`) as JSON.
 */

export function inputTypeName(name: string): string {
  return `${name}Input`;
}

/** A coded element takes its code as a `String` (see outputField in types.ts). */
function inputField(field: FieldModel): SdlField {
  const named = field.kind === 'resource' ? 'JSON' : field.kind === 'object' ? inputTypeName(field.type) : field.type;
  // `_birthDate: ElementInput`, `_given: [ElementInput]` (null items line up with `given`), no description.
  const description = field.primitiveExtension ? undefined : field.description;
  return { name: field.name, type: field.list ? `[${named}]` : named, description };
}

function inputType(object: ObjectModel): string {
  const fields = object.fields.map(inputField);
  if (object.kind === 'resource') fields.unshift({ name: 'resourceType', type: 'String' });
  return block(`input ${inputTypeName(object.name)}`, fields, object.description);
}

export function generateInputsSdl(model: FhirModel): string {
  return sdlFile(model.objects.map(inputType));
}

export function inputTypeNames(model: FhirModel): string[] {
  return model.objects.map((object) => inputTypeName(object.name));
}
