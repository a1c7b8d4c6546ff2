import { oldVisit, type PluginFunction, type Types } from '@graphql-codegen/plugin-helpers';
import { transformSchemaAST } from '@graphql-codegen/schema-ast';
import { includeIntrospectionTypesDefinitions, TsVisitor, type TypeScriptPluginConfig } from '@graphql-codegen/typescript';
import {
  getNamedType,
  getNullableType,
  isInterfaceType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type ASTNode,
  type GraphQLSchema,
  type NamedTypeNode,
} from 'graphql';

/**
 * The `typescript` plugin of GraphQL Code Generator with one change, for the FHIR JSON types: the
 * items of both lists of an aligned pair, a repeating primitive and its primitive-extension list
 * (`given: [String]` and its `_` sibling `_given: [Element]`), are typed `T | null`
 * (`string | null`, `Element | null`). FHIR JSON lines the two lists up by index and fills the gaps
 * of either with null (`"given": ["A", null], "_given": [null, {...}]`: a value without extensions,
 * extensions without a value), while `maybeValue: 'T'` keeps every other absent field `undefined`,
 * never `null`.
 *
 * Why a plugin: the typescript plugin has no per-field nullability (`maybeValue` applies to every
 * output field; `directiveArgumentAndInputFieldMappings` only to arguments and input fields), and
 * rewriting its printed output would mean matching arbitrary text. So this subclasses the plugin's own
 * visitor (TsVisitor), changing one decision, the type of a list item, for fields picked from the
 * schema; `plugin` below is the typescript plugin's own function with that visitor swapped in.
 * Input types need nothing: `inputMaybeValue: 'T | null'` already lets every input list item be null.
 */
export const plugin: PluginFunction<TypeScriptPluginConfig, Types.ComplexPluginOutput> = (schema, documents, config) => {
  const { schema: transformed, ast } = transformSchemaAST(schema, config);
  const visitor = new FhirJsonVisitor(transformed, config);
  const visited = oldVisit(ast, { leave: visitor });
  return {
    prepend: [
      ...visitor.getEnumsImports(),
      ...visitor.getDirectiveArgumentAndInputFieldMappingsImports(),
      ...visitor.getScalarsImports(),
      ...visitor.getWrapperDefinitions(),
    ].filter(Boolean),
    content: [
      visitor.scalarsDefinition,
      visitor.directiveArgumentAndInputFieldMappingsDefinition,
      ...visited.definitions,
      ...includeIntrospectionTypesDefinitions(transformed, documents, config),
    ]
      .filter(Boolean)
      .join('\n'),
  };
};

/** FHIR's Element: the type of a primitive's `_` sibling, holding its id and extensions. */
const PRIMITIVE_ELEMENT_TYPE = 'Element';

/**
 * `Type.field` of every list of an aligned pair whose items the schema lets be null: a field `_x` of
 * an object or interface type whose type is a list of Element, and the repeating primitive `x` beside
 * it (`HumanName._given` and `HumanName.given`). Each list is judged by its own item type: an item
 * declared non-null (`[Element!]`) stays non-null. A list of Element named otherwise is an error, so a
 * change of the schema's shape shows here instead of silently typing a list wrong.
 */
export function alignedElementLists(schema: GraphQLSchema): Set<string> {
  const aligned = new Set<string>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !(isObjectType(type) || isInterfaceType(type))) continue;
    const fields = type.getFields();
    for (const field of Object.values(fields)) {
      const list = getNullableType(field.type);
      if (!isListType(list) || getNamedType(list).name !== PRIMITIVE_ELEMENT_TYPE) continue;
      const values = fields[field.name.slice(1)];
      const valueList = values && getNullableType(values.type);
      if (!field.name.startsWith('_') || !isListType(valueList) || !isLeafType(getNamedType(valueList))) {
        throw new Error(`codegen: ${type.name}.${field.name} is a list of ${PRIMITIVE_ELEMENT_TYPE} but not the \`_\` sibling of a repeating primitive`);
      }
      if (!isNonNullType(list.ofType)) aligned.add(`${type.name}.${field.name}`);
      if (!isNonNullType(valueList.ofType)) aligned.add(`${type.name}.${field.name.slice(1)}`);
    }
  }
  return aligned;
}

class FhirJsonVisitor extends TsVisitor {
  private readonly aligned: Set<string>;

  constructor(schema: GraphQLSchema, config: TypeScriptPluginConfig) {
    super(schema, config);
    this.aligned = alignedElementLists(schema);
  }

  /** A named type; the item of an aligned list becomes `T | null`, whatever `maybeValue` says. */
  override NamedType(node: NamedTypeNode, key: unknown, parent: unknown, path: unknown, ancestors: unknown): string {
    const type = super.NamedType(node, key, parent, path, ancestors);
    const field = listItemField(parent as ASTNode | undefined, ancestors as ReadonlyArray<ASTNode | readonly ASTNode[]>);
    return field && this.aligned.has(field) ? `${this.clearOptional(type)} | null` : type;
  }
}

/**
 * `Type.field` when a NamedType node (seen from its parent and its ancestors, as graphql-js visits:
 * nodes and arrays, the parent excluded) is the item type of a field's list: `[T]` or `[T]!`.
 */
function listItemField(parent: ASTNode | undefined, ancestors: ReadonlyArray<ASTNode | readonly ASTNode[]>): string | undefined {
  if (parent?.kind !== Kind.LIST_TYPE) return undefined;
  const last = ancestors[ancestors.length - 1];
  const index = isNode(last) && last.kind === Kind.NON_NULL_TYPE ? ancestors.length - 2 : ancestors.length - 1;
  const field = ancestors[index];
  const owner = ancestors[index - 2];
  if (!isNode(field) || field.kind !== Kind.FIELD_DEFINITION || !isNode(owner)) return undefined;
  if (owner.kind !== Kind.OBJECT_TYPE_DEFINITION && owner.kind !== Kind.INTERFACE_TYPE_DEFINITION) return undefined;
  return `${owner.name.value}.${field.name.value}`;
}

function isNode(value: ASTNode | readonly ASTNode[] | undefined): value is ASTNode {
  return value !== undefined && !Array.isArray(value);
}
