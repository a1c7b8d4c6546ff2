import { enumOfField, type BindingEnums } from './enums.js';
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

function inputField(field: FieldModel, bindings: BindingEnums): SdlField {
  const named =
    field.kind === 'resource' ? 'JSON' : field.kind === 'object' ? inputTypeName(field.type) : (enumOfField(field, bindings) ?? field.type);
  // `_birthDate: ElementInput`, `_given: [ElementInput]` (null items line up with `given`), no description.
  const description = field.primitiveExtension ? undefined : field.description;
  return { name: field.name, type: field.list ? `[${named}]` : named, description };
}

function inputType(object: ObjectModel, bindings: BindingEnums): string {
  const fields = object.fields.map((field) => inputField(field, bindings));
  if (object.kind === 'resource') fields.unshift({ name: 'resourceType', type: 'String' });
  return block(`input ${inputTypeName(object.name)}`, fields, object.description);
}

export function generateInputsSdl(model: FhirModel, bindings: BindingEnums): string {
  return sdlFile(model.objects.map((object) => inputType(object, bindings)));
}

export function inputTypeNames(model: FhirModel): string[] {
  return model.objects.map((object) => inputTypeName(object.name));
}
