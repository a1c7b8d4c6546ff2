import { apiTypeNames, generateApiSdl } from './api.js';
import { codeFieldsTable, collectBindingEnums, enumCodesModule, enumOfCodes, type CodesOf, type EnumModel } from './enums.js';
import { generateInputsSdl, inputTypeNames } from './inputs.js';
import { buildModel, compare } from './model.js';
import { referenceParamEnums, reverseReferenceSources } from './references.js';
import { generateResourceTypesModule } from './resource-types.js';
import { generateTypesSdl, RESOURCE_TYPE_ENUM } from './types.js';

/**
 * The schema generator: FHIR definitions → SDL files and the enum code table. Returns the files'
 * contents by path relative to the repository root; scripts/generate-schema.ts writes them.
 */

export const TYPES_FILE = 'schema/fhir-types.graphql';
export const INPUTS_FILE = 'schema/fhir-inputs.graphql';
export const API_FILE = 'schema/fhir-api.graphql';
export const OPERATIONS_FILE = 'schema/fhir-operations.graphql';
export const ENUM_CODES_FILE = 'src/generated/graphql-enum-codes.ts';
export const RESOURCE_TYPES_FILE = 'src/generated/fhir-resources.ts';

/** Names the hand-written schema/base.graphql defines (and GraphQL's own scalars). */
const BASE_NAMES = ['Query', 'Mutation', 'Health', 'JSON', 'Resource', 'String', 'Int', 'Float', 'Boolean', 'ID'];

export interface GenerateOptions {
  /** Value-set expansion of required bindings (default: src/fhir/required-bindings.ts). */
  codesOf?: CodesOf;
}

export function generateSchemaFiles(options: GenerateOptions = {}): Record<string, string> {
  const model = buildModel();
  const resourceTypeEnum = enumOfCodes(RESOURCE_TYPE_ENUM, model.resourceTypes, 'Every resource type this server stores.');
  if (!resourceTypeEnum) throw new Error('generate-schema: the resource types cannot form an enum');
  const referenceEnums = referenceParamEnums(model.resourceTypes);

  // Names enums must not take; ResourceType may be shared by a value set listing exactly these types.
  const taken = new Map<string, EnumModel | undefined>();
  for (const name of [...BASE_NAMES, ...model.objects.map((o) => o.name), ...inputTypeNames(model), ...apiTypeNames(model)]) {
    taken.set(name, undefined);
  }
  for (const fixed of [resourceTypeEnum, ...referenceEnums]) taken.set(fixed.name, fixed);
  const bindings = collectBindingEnums(model, taken, options.codesOf);

  // The binding enums are no GraphQL types (coded fields are String): codegen.ts adds them for TypeScript.
  const enums = [resourceTypeEnum, ...referenceEnums].sort((a, b) => compare(a.name, b.name));
  return {
    [TYPES_FILE]: generateTypesSdl({ model, enums, reverseSources: reverseReferenceSources(model.resourceTypes) }),
    [INPUTS_FILE]: generateInputsSdl(model),
    [API_FILE]: generateApiSdl(model),
    [ENUM_CODES_FILE]: enumCodesModule(enums, bindings.enums, codeFieldsTable(model, bindings)),
    [RESOURCE_TYPES_FILE]: generateResourceTypesModule(model, bindings),
  };
}
