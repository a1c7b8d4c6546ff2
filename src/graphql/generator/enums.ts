import { requiredBindingCodes } from '../../fhir/required-bindings.js';
import { shippedValueSet } from '../../fhir/terminology-catalogue.js';
import type { FhirModel, FieldModel } from './model.js';
import { compare } from './model.js';
import { hyphenToUnderscore, isGraphQLName, pascalCase } from './names.js';

/**
 * Enums: `ResourceType` and one per search-reference set (api.ts) are GraphQL enums. Value names are
 * the codes with `-` written `_`; the schema gives every value its FHIR code as internal value
 * (enumCodes), so resolvers and arguments only ever see FHIR codes. The value sets of required
 * bindings whose codes can all be enum values are enums for the TypeScript types only (codegen.ts):
 * the schema's coded fields are `String`.
 */

export interface EnumValueModel {
  /** The GraphQL value name (`entered_in_error`). */
  name: string;
  /** The FHIR code it stands for (`entered-in-error`). */
  code: string;
}

export interface EnumModel {
  name: string;
  description?: string;
  values: readonly EnumValueModel[];
}

/** A code that is a valid enum value once `-` is written `_`; `true`, `false`, `null` are not allowed values. */
const ENUM_CODE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const RESERVED_VALUES = new Set(['true', 'false', 'null']);

/** An enum of these codes, or undefined when one of them cannot be a value or two collide after `-`→`_`. */
export function enumOfCodes(name: string, codes: readonly string[], description?: string): EnumModel | undefined {
  if (codes.length === 0) return undefined;
  const names = new Set<string>();
  const values: EnumValueModel[] = [];
  for (const code of codes) {
    const value = hyphenToUnderscore(code);
    if (!ENUM_CODE.test(code) || RESERVED_VALUES.has(code) || !isGraphQLName(value) || names.has(value)) return undefined;
    names.add(value);
    values.push({ name: value, code });
  }
  return { name, description, values };
}

export interface BindingEnums {
  enums: readonly EnumModel[];
  /** Value set url (without version) → enum name, for the value sets that became enums. */
  byValueSet: ReadonlyMap<string, string>;
}

export type CodesOf = (valueSetUrl: string) => readonly string[] | undefined;

/**
 * One enum per required-binding value set that expands to usable codes. Value sets are visited in
 * url order and take the first free name of: the value set's name, the url's last segment, either
 * with `Code` appended. A name already taken by an enum with the same codes is shared (the
 * resource-types value set reuses `ResourceType` when it lists exactly the resource types).
 */
export function collectBindingEnums(
  model: FhirModel,
  taken: ReadonlyMap<string, EnumModel | undefined>,
  codesOf: CodesOf = requiredBindingCodes,
): BindingEnums {
  const names = new Map(taken);
  const enums: EnumModel[] = [];
  const byValueSet = new Map<string, string>();
  for (const url of boundValueSets(model)) {
    const codes = codesOf(url);
    if (!codes) continue;
    const valueSet = shippedValueSet(url);
    const text = `Codes of the value set ${url} (required binding).`;
    const candidate = enumOfCodes('', codes, text);
    if (!candidate) continue;
    const name = chooseName(names, candidate, [String(valueSet?.name ?? ''), url.slice(url.lastIndexOf('/') + 1)]);
    if (!name) continue;
    if (!names.has(name)) {
      const named = { ...candidate, name };
      names.set(name, named);
      enums.push(named);
    }
    byValueSet.set(url, name);
  }
  enums.sort((a, b) => compare(a.name, b.name));
  return { enums, byValueSet };
}

function chooseName(names: ReadonlyMap<string, EnumModel | undefined>, candidate: EnumModel, labels: string[]): string | undefined {
  const stems = labels.map(pascalCase).filter((stem) => stem.length > 0 && isGraphQLName(stem));
  for (const name of [...stems, ...stems.map((stem) => `${stem}Code`)]) {
    if (!names.has(name)) return name;
    const existing = names.get(name);
    if (existing && sameCodes(existing, candidate)) return name;
  }
  return undefined;
}

function sameCodes(a: EnumModel, b: EnumModel): boolean {
  const codes = new Set(a.values.map((value) => value.code));
  return a.values.length === b.values.length && b.values.every((value) => codes.has(value.code));
}

function boundValueSets(model: FhirModel): string[] {
  const urls = new Set<string>();
  for (const object of model.objects) {
    for (const field of object.fields) if (field.requiredValueSet) urls.add(stripVersion(field.requiredValueSet));
  }
  return [...urls].sort(compare);
}

export function stripVersion(canonical: string): string {
  const bar = canonical.indexOf('|');
  return bar < 0 ? canonical : canonical.slice(0, bar);
}

/** The enum a field's values belong to, if its binding became one. */
export function enumOfField(field: FieldModel, bindings: BindingEnums): string | undefined {
  return field.requiredValueSet ? bindings.byValueSet.get(stripVersion(field.requiredValueSet)) : undefined;
}

/** enum → value name → FHIR code, for the values whose name differs from their code. */
export function enumCodesTable(enums: readonly EnumModel[]): Record<string, Record<string, string>> {
  const table: Record<string, Record<string, string>> = {};
  for (const model of [...enums].sort((a, b) => compare(a.name, b.name))) {
    const differing = model.values.filter((value) => value.name !== value.code);
    if (differing.length > 0) table[model.name] = Object.fromEntries(differing.map((value) => [value.name, value.code]));
  }
  return table;
}

/** object type → field → the binding enum its codes come from, for codegen.ts. */
export function codeFieldsTable(model: FhirModel, bindings: BindingEnums): Record<string, Record<string, string>> {
  const table: Record<string, Record<string, string>> = {};
  for (const object of model.objects) {
    for (const field of object.fields) {
      const name = enumOfField(field, bindings);
      if (name) (table[object.name] ??= {})[field.name] = name;
    }
  }
  return table;
}

function objectLines(table: Record<string, Record<string, string>>): string {
  return Object.entries(table)
    .map(([name, values]) => `  ${name}: { ${Object.entries(values).map(([key, value]) => `${key}: '${value}'`).join(', ')} },\n`)
    .join('');
}

function listLines(enums: readonly EnumModel[]): string {
  return [...enums]
    .sort((a, b) => compare(a.name, b.name))
    .map((model) => `  ${model.name}: { description: '${model.description ?? ''}', codes: [${model.values.map((value) => `'${value.code}'`).join(', ')}] },\n`)
    .join('');
}

/**
 * src/generated/graphql-enum-codes.ts: the schema's enums' value names that differ from their code,
 * and for codegen.ts the binding value sets and the coded fields taking them.
 */
export function enumCodesModule(schemaEnums: readonly EnumModel[], bindingEnums: readonly EnumModel[], codeFields: Record<string, Record<string, string>>): string {
  return (
    '// Generated by `npm run generate:schema` (scripts/generate-schema.ts). Do not edit by hand.\n\n' +
    '/**\n' +
    ' * GraphQL enum value names that differ from the FHIR code they stand for (`-` is written `_`):\n' +
    ' * enum → value name → FHIR code. The schema uses them as internal values, so resolvers and\n' +
    ' * arguments see FHIR codes (`_reference: general_practitioner` is `general-practitioner`).\n' +
    ' */\n' +
    `export const enumCodes: Record<string, Record<string, string>> = {\n${objectLines(enumCodesTable(schemaEnums))}};\n\n` +
    '/**\n' +
    ' * The codes of each required-binding value set that can be a TypeScript union (named after the\n' +
    ' * value set). Coded fields are `String` in the schema; codegen.ts types them with these unions.\n' +
    ' */\n' +
    `export const codeValueSets: Record<string, { description: string; codes: readonly string[] }> = {\n${listLines(bindingEnums)}};\n\n` +
    '/** object type → coded field → its value set in codeValueSets (or the schema enum ResourceType). */\n' +
    `export const codeFields: Record<string, Record<string, string>> = {\n${objectLines(codeFields)}};\n`
  );
}
