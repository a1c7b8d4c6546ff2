import {
  Kind,
  type DefinitionNode,
  type DocumentNode,
  type EnumTypeDefinitionNode,
  type FieldDefinitionNode,
  type TypeNode,
} from 'graphql';

/** A required-binding value set as src/generated/graphql-enum-codes.ts lists it. */
export interface CodeValueSet {
  description: string;
  codes: readonly string[];
}

/**
 * The schema codegen reads: schema/*.graphql with each coded output field typed by the enum of its
 * value set (`Patient.gender: AdministrativeGender`) and those enums added, their value names the
 * codes with `-` written `_` (codegen.ts maps them back to codes with `enumValues`). The server's
 * schema has these fields as `String`; only the TypeScript types differ, and only where the server
 * answers stored, validated FHIR JSON (object types). Input types, arguments and variables keep
 * `String`, as the server takes any string there and the validator judges it.
 */
export function withCodeUnions(
  document: DocumentNode,
  valueSets: Readonly<Record<string, CodeValueSet>>,
  fields: Readonly<Record<string, Readonly<Record<string, string>>>>,
): DocumentNode {
  const defined = new Set(document.definitions.flatMap((node) => ('name' in node && node.name ? [node.name.value] : [])));
  const added = Object.entries(valueSets)
    .filter(([name]) => !defined.has(name))
    .map(([name, valueSet]) => enumDefinition(name, valueSet));
  const definitions = document.definitions.map((node) => {
    const coded = node.kind === Kind.OBJECT_TYPE_DEFINITION ? fields[node.name.value] : undefined;
    if (!coded || node.kind !== Kind.OBJECT_TYPE_DEFINITION) return node;
    return { ...node, fields: node.fields?.map((field) => retyped(field, coded[field.name.value])) };
  });
  return { ...document, definitions: withEnumsInOrder(definitions, added) };
}

/**
 * Every enum sorted by name where the first enum stood, so the generated types keep the order
 * they had when these enums were part of the schema.
 */
function withEnumsInOrder(definitions: readonly DefinitionNode[], added: readonly EnumTypeDefinitionNode[]): DefinitionNode[] {
  const isEnum = (node: DefinitionNode): node is EnumTypeDefinitionNode => node.kind === Kind.ENUM_TYPE_DEFINITION;
  const enums = [...definitions.filter(isEnum), ...added].sort((a, b) => byCodePoint(a.name.value, b.name.value));
  const first = definitions.findIndex(isEnum);
  const others = definitions.filter((node) => !isEnum(node));
  const at = first < 0 ? others.length : first;
  return [...others.slice(0, at), ...enums, ...others.slice(at)];
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** enum → value name → code, for the added enums' values whose name differs from their code. */
export function codeUnionValueNames(valueSets: Readonly<Record<string, CodeValueSet>>): Record<string, Record<string, string>> {
  const table: Record<string, Record<string, string>> = {};
  for (const [name, { codes }] of Object.entries(valueSets)) {
    const differing = codes.filter((code) => valueName(code) !== code);
    if (differing.length > 0) table[name] = Object.fromEntries(differing.map((code) => [valueName(code), code]));
  }
  return table;
}

function valueName(code: string): string {
  return code.replaceAll('-', '_');
}

function retyped(field: FieldDefinitionNode, enumName: string | undefined): FieldDefinitionNode {
  return enumName ? { ...field, type: renamed(field.type, enumName) } : field;
}

/** The same list and non-null wrapping around another named type. */
function renamed(type: TypeNode, name: string): TypeNode {
  if (type.kind === Kind.NAMED_TYPE) return { ...type, name: { ...type.name, value: name } };
  if (type.kind === Kind.LIST_TYPE) return { ...type, type: renamed(type.type, name) };
  return { ...type, type: renamed(type.type, name) as typeof type.type };
}

function enumDefinition(name: string, valueSet: CodeValueSet): EnumTypeDefinitionNode {
  return {
    kind: Kind.ENUM_TYPE_DEFINITION,
    name: { kind: Kind.NAME, value: name },
    description: valueSet.description ? { kind: Kind.STRING, value: valueSet.description } : undefined,
    values: valueSet.codes.map((code) => ({ kind: Kind.ENUM_VALUE_DEFINITION, name: { kind: Kind.NAME, value: valueName(code) } })),
  };
}
