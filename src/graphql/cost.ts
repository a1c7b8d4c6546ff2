import {
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { listBuiltinOperations } from '../operations/registry.js';
import { DEFAULT_COUNT } from '../search/service.js';
import { operationFields } from './generator/operations.js';

/**
 * How many items a list field is assumed to return when the query does not say (`_count`):
 * a search page has the search's default page size; a repeating element of a resource (`name`,
 * `identifier`, `given`) is data already loaded, usually a handful of items.
 */
export const SEARCH_PAGE_ESTIMATE = DEFAULT_COUNT;
export const ELEMENT_LIST_ESTIMATE = 5;

/**
 * An operation field (`ValueSetExpand`, `CodeSystemLookup`, ...) runs a FHIR operation: a request's
 * worth of work and memory, whatever few fields the query reads of its answer. Its first list
 * (`expansion.contains`) is counted as the operation's `count` argument, else as the largest list a
 * query may ask for: an expansion lists up to thousands of codes.
 */
export const OPERATION_FIELD_COST = 1000;

/** A limit a query goes over: the message for the client and the nodes it points at. */
export interface LimitViolation {
  readonly message: string;
  readonly nodes: readonly FieldNode[] | readonly OperationDefinitionNode[];
}

export interface Measure {
  /** Estimated cost of the selection set. */
  readonly cost: number;
  /** Levels of fields below (and including) the selection set's fields. */
  readonly depth: number;
  /** Operation fields it holds (aliases and fragment spreads each count). */
  readonly operations: number;
  /** `__schema` fields it holds: each answers with the whole schema, megabytes. */
  readonly schemaFields: number;
  /** `__type` fields it holds: each answers with one type, `Query` with hundreds of fields. */
  readonly typeFields: number;
}

const NOTHING: Measure = { cost: 0, depth: 0, operations: 0, schemaFields: 0, typeFields: 0 };
const SCHEMA_FIELD: Measure = { ...NOTHING, schemaFields: 1 };
const TYPE_FIELD: Measure = { ...NOTHING, typeFields: 1 };

/**
 * One pass over an operation: the cost and the depth of each selection set, bottom-up. A fragment is
 * measured once per place kind (memo), so a document of fragments spreading fragments costs linear
 * time to check, however large the query it expands to. The recursion follows the selections'
 * nesting, which the document limits (document-limits.ts) bound before anything is parsed.
 */
export class CostAnalysis {
  violation: LimitViolation | undefined;
  private readonly fragmentMeasures = new Map<string, Measure>();
  private readonly fragmentsInProgress = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragment: (name: string) => FragmentDefinitionNode | null | undefined,
    private readonly maxListSize: number,
    private readonly variables: ReadonlyMap<string, unknown> | undefined,
  ) {}

  /**
   * `pageSize`: set under a search field that is not itself a list (`PatientConnection`) or under an
   * operation field: its first list field (`edges`, `expansion.contains`) holds the page.
   */
  selectionSet(selectionSet: SelectionSetNode, parent: GraphQLNamedType, pageSize: number | undefined): Measure {
    let total = NOTHING;
    for (const selection of selectionSet.selections) {
      let measure: Measure;
      if (selection.kind === Kind.FIELD) {
        measure = this.field(selection, parent, pageSize);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? this.schema.getType(selection.typeCondition.name.value) : parent;
        measure = type ? this.selectionSet(selection.selectionSet, type, pageSize) : NOTHING;
      } else {
        measure = this.fragmentSpread(selection.name.value, pageSize);
      }
      total = {
        cost: total.cost + measure.cost,
        depth: Math.max(total.depth, measure.depth),
        operations: total.operations + measure.operations,
        schemaFields: total.schemaFields + measure.schemaFields,
        typeFields: total.typeFields + measure.typeFields,
      };
      if (this.violation) break;
    }
    return total;
  }

  private fragmentSpread(name: string, pageSize: number | undefined): Measure {
    const key = `${name}:${pageSize ?? ''}`;
    const known = this.fragmentMeasures.get(key);
    if (known) return known;
    const definition = this.fragment(name);
    // Unknown fragments and cycles are validation errors of their own (graphql's standard rules).
    if (!definition || this.fragmentsInProgress.has(name)) return NOTHING;
    const type = this.schema.getType(definition.typeCondition.name.value);
    if (!type) return NOTHING;
    this.fragmentsInProgress.add(name);
    const measure = this.selectionSet(definition.selectionSet, type, pageSize);
    this.fragmentsInProgress.delete(name);
    this.fragmentMeasures.set(key, measure);
    return measure;
  }

  private field(node: FieldNode, parent: GraphQLNamedType, pageSize: number | undefined): Measure {
    const name = node.name.value;
    // The schema is in memory: introspection costs no database work, but its answers are large (counted apart).
    if (name === '__schema') return SCHEMA_FIELD;
    if (name === '__type') return TYPE_FIELD;
    if (name.startsWith('__')) return NOTHING;
    const definition = fieldOf(parent, name);
    // Unknown fields are reported by graphql's own rules.
    if (!definition) return NOTHING;
    if (this.isOperationField(parent, name)) return this.operationField(node, definition);
    const count = this.countArgument(node);
    if (this.violation) return NOTHING;
    const search = isSearchField(definition);
    const list = isListType(getNullableType(definition.type));
    let multiplier = 1;
    // A single object passes the page size on to its own first list (`expansion` to `contains`).
    let childPageSize = list ? undefined : pageSize;
    if (list) multiplier = count ?? (search ? SEARCH_PAGE_ESTIMATE : (pageSize ?? ELEMENT_LIST_ESTIMATE));
    else if (search) childPageSize = count ?? SEARCH_PAGE_ESTIMATE;
    const child = this.children(node, definition, childPageSize);
    return { ...child, cost: multiplier * (1 + child.cost), depth: 1 + child.depth };
  }

  private operationField(node: FieldNode, definition: GraphQLField<unknown, unknown>): Measure {
    const count = this.valueOf(node.arguments?.find((arg) => arg.name.value === 'count')?.value);
    const pageSize = typeof count === 'number' && Number.isFinite(count) ? Math.max(0, count) : this.maxListSize;
    const child = this.children(node, definition, pageSize);
    return { ...child, cost: OPERATION_FIELD_COST + child.cost, depth: 1 + child.depth, operations: child.operations + 1 };
  }

  private children(node: FieldNode, definition: GraphQLField<unknown, unknown>, pageSize: number | undefined): Measure {
    return node.selectionSet ? this.selectionSet(node.selectionSet, getNamedType(definition.type), pageSize) : NOTHING;
  }

  private isOperationField(parent: GraphQLNamedType, name: string): boolean {
    const root = parent === this.schema.getQueryType() ? 'Query' : parent === this.schema.getMutationType() ? 'Mutation' : undefined;
    return root !== undefined && operationFieldNames().has(`${root}.${name}`);
  }

  /** The field's `_count` when the query gives it (a literal, or a variable's value when known). */
  private countArgument(node: FieldNode): number | undefined {
    const argument = node.arguments?.find((arg) => arg.name.value === '_count');
    if (!argument) return undefined;
    const value = this.valueOf(argument.value);
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
    if (value > this.maxListSize) {
      this.violation = {
        message: `_count ${value} on "${node.name.value}" is more than the ${this.maxListSize} items a list may have`,
        nodes: [node],
      };
      return undefined;
    }
    return Math.max(0, value);
  }

  private valueOf(value: ValueNode | undefined): unknown {
    if (value?.kind === Kind.INT || value?.kind === Kind.FLOAT) return Number(value.value);
    if (value?.kind === Kind.VARIABLE) return this.variables?.get(value.name.value);
    return undefined;
  }
}

let operationNames: ReadonlySet<string> | undefined;

/** `Query.ValueSetExpand`, `Mutation.ProjectInit`, ...: the fields of the built-in operations. */
function operationFieldNames(): ReadonlySet<string> {
  operationNames ??= new Set(operationFields(listBuiltinOperations()).map((field) => `${field.root}.${field.name}`));
  return operationNames;
}

/** Search fields (`TList`, `TConnection`, reverse reference lists) are the ones with `_sort`. */
function isSearchField(field: GraphQLField<unknown, unknown>): boolean {
  return field.args.some((arg) => arg.name === '_sort');
}

function fieldOf(type: GraphQLNamedType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (!isObjectType(type) && !isInterfaceType(type)) return undefined;
  return type.getFields()[name];
}
