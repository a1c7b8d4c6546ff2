import {
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  visit,
  type ASTVisitor,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Config } from '../config.js';
import { issue, outcome, OperationOutcomeError } from '../fhir/outcome.js';
import { DEFAULT_COUNT } from '../search/service.js';
import { findOperation, fragmentsOf } from './documents.js';
import { outcomeToGraphQLError } from './errors.js';

/** What a query may ask for; from the GRAPHQL_* settings. */
export interface QueryLimits {
  readonly maxDepth: number;
  readonly maxCost: number;
  readonly maxListSize: number;
  readonly introspection: boolean;
}

/**
 * How many items a list field is assumed to return when the query does not say (`_count`):
 * a search page has the search's default page size; a repeating element of a resource (`name`,
 * `identifier`, `given`) is data already loaded, usually a handful of items.
 */
export const SEARCH_PAGE_ESTIMATE = DEFAULT_COUNT;
export const ELEMENT_LIST_ESTIMATE = 5;

export function queryLimits(config: Config): QueryLimits {
  return {
    maxDepth: config.graphqlMaxDepth,
    maxCost: config.graphqlMaxCost,
    maxListSize: config.graphqlMaxListSize,
    introspection: config.graphqlIntrospection,
  };
}

/**
 * Query depth, cost and list-size limits, and the introspection switch, enforced before execution.
 * The checks run as validation rules, before the request context is built (so before authentication
 * and any database work). A `_count` given by a variable is only known at execution: such operations
 * are checked again, with the variables' values, before the first resolver runs.
 */
export function useQueryLimits(config: Config): Plugin {
  const limits = queryLimits(config);
  const rule = queryLimitsRule(limits);
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(rule);
      if (!limits.introspection) addValidationRule(NoIntrospectionRule);
    },
    onExecute({ args, setResultAndStopExecution }) {
      if (!countsFromVariables(args.document)) return;
      const operation = findOperation(args.document, args.operationName);
      if (!operation) return;
      const fragments = fragmentsOf(args.document);
      const violation = checkOperation(args.schema, operation, (name) => fragments.get(name), limits, args.variableValues ?? {});
      if (violation) setResultAndStopExecution({ errors: [violationError(violation)] });
    },
  };
}

const variableCounts = new WeakMap<DocumentNode, boolean>();

/**
 * Whether some `_count` of the document is a variable, so that only execution knows the list size.
 * Once per document: yoga reuses parsed documents, so most requests skip the second check.
 */
export function countsFromVariables(document: DocumentNode): boolean {
  let known = variableCounts.get(document);
  if (known === undefined) {
    known = false;
    visit(document, {
      Argument(node) {
        if (node.name.value === '_count' && node.value.kind === Kind.VARIABLE) known = true;
      },
    });
    variableCounts.set(document, known);
  }
  return known;
}

/** A limit a query goes over: the message for the client and the nodes it points at. */
export interface LimitViolation {
  readonly message: string;
  readonly nodes: readonly FieldNode[] | readonly OperationDefinitionNode[];
}

/** The validation rule: every operation of the document within the limits, variables taken as unknown. */
function queryLimitsRule(limits: QueryLimits): (context: ValidationContext) => ASTVisitor {
  // A named function: yoga caches validation results by the rules' names.
  return function FlintQueryLimits(context: ValidationContext): ASTVisitor {
    return {
      OperationDefinition(operation) {
        const violation = checkOperation(context.getSchema(), operation, (name) => context.getFragment(name), limits);
        if (violation) context.reportError(violationError(violation));
        return false;
      },
    };
  };
}

/** `__schema` and `__type` refused when GRAPHQL_INTROSPECTION=false (`__typename` stays: clients need it). */
function NoIntrospectionRule(context: ValidationContext): ASTVisitor {
  return {
    Field(node) {
      if (node.name.value === '__schema' || node.name.value === '__type') {
        const error = new OperationOutcomeError(
          outcome([issue('forbidden', `GraphQL introspection is disabled on this server: "${node.name.value}" cannot be queried`)]),
          400,
        );
        context.reportError(outcomeToGraphQLError(error, { nodes: [node], source: undefined, positions: undefined, path: undefined }));
      }
    },
  };
}

function violationError(violation: LimitViolation) {
  const error = new OperationOutcomeError(outcome([issue('too-costly', violation.message)]));
  return outcomeToGraphQLError(error, { nodes: violation.nodes, source: undefined, positions: undefined, path: undefined }, true);
}

/** The first limit the operation goes over, if any. `variables` undefined: validation, values unknown. */
export function checkOperation(
  schema: GraphQLSchema | null | undefined,
  operation: OperationDefinitionNode,
  fragment: (name: string) => FragmentDefinitionNode | null | undefined,
  limits: QueryLimits,
  variables?: Readonly<Record<string, unknown>>,
): LimitViolation | undefined {
  const root = schema ? rootType(schema, operation) : undefined;
  if (!root) return undefined;
  const analysis = new CostAnalysis(schema as GraphQLSchema, fragment, limits, variableValues(operation, variables));
  const measure = analysis.selectionSet(operation.selectionSet, root, undefined);
  if (analysis.violation) return analysis.violation;
  if (measure.depth > limits.maxDepth) {
    return {
      message: `The query is too deep: ${measure.depth} levels of fields, the limit is ${limits.maxDepth}`,
      nodes: [operation],
    };
  }
  if (measure.cost > limits.maxCost) {
    return {
      message:
        `The query is too costly: its estimated cost is ${Math.round(measure.cost)}, the limit is ${limits.maxCost} ` +
        `(each field costs 1; a list field multiplies its fields by its _count, ${SEARCH_PAGE_ESTIMATE} for a search ` +
        `without _count, ${ELEMENT_LIST_ESTIMATE} for a repeating element without _count)`,
      nodes: [operation],
    };
  }
  return undefined;
}

interface Measure {
  /** Estimated cost of the selection set. */
  readonly cost: number;
  /** Levels of fields below (and including) the selection set's fields. */
  readonly depth: number;
}

const NOTHING: Measure = { cost: 0, depth: 0 };

/**
 * One pass over an operation: the cost and the depth of each selection set, bottom-up. A fragment is
 * measured once per place kind (memo), so a document of fragments spreading fragments costs linear
 * time to check, however large the query it expands to.
 */
class CostAnalysis {
  violation: LimitViolation | undefined;
  private readonly fragmentMeasures = new Map<string, Measure>();
  private readonly fragmentsInProgress = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragment: (name: string) => FragmentDefinitionNode | null | undefined,
    private readonly limits: QueryLimits,
    private readonly variables: ReadonlyMap<string, unknown> | undefined,
  ) {}

  /**
   * `pageSize`: set under a search field that is not itself a list (`PatientConnection`): its first
   * list field (`edges`) holds the page.
   */
  selectionSet(selectionSet: SelectionSetNode, parent: GraphQLNamedType, pageSize: number | undefined): Measure {
    let cost = 0;
    let depth = 0;
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
      cost += measure.cost;
      depth = Math.max(depth, measure.depth);
      if (this.violation) break;
    }
    return { cost, depth };
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
    // Introspection reads the schema in memory; the introspection switch governs it, not the cost.
    if (node.name.value.startsWith('__')) return NOTHING;
    const definition = fieldOf(parent, node.name.value);
    // Unknown fields are reported by graphql's own rules.
    if (!definition) return NOTHING;
    const count = this.countArgument(node);
    if (this.violation) return NOTHING;
    const search = isSearchField(definition);
    const list = isListType(getNullableType(definition.type));
    let multiplier = 1;
    let childPageSize: number | undefined;
    if (list) multiplier = count ?? (search ? SEARCH_PAGE_ESTIMATE : (pageSize ?? ELEMENT_LIST_ESTIMATE));
    else if (search) childPageSize = count ?? SEARCH_PAGE_ESTIMATE;
    const child = node.selectionSet
      ? this.selectionSet(node.selectionSet, getNamedType(definition.type), childPageSize)
      : NOTHING;
    return { cost: multiplier * (1 + child.cost), depth: 1 + child.depth };
  }

  /** The field's `_count` when the query gives it (a literal, or a variable's value when known). */
  private countArgument(node: FieldNode): number | undefined {
    const argument = node.arguments?.find((arg) => arg.name.value === '_count');
    if (!argument) return undefined;
    const value = this.valueOf(argument.value);
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
    if (value > this.limits.maxListSize) {
      this.violation = {
        message: `_count ${value} on "${node.name.value}" is more than the ${this.limits.maxListSize} items a list may have`,
        nodes: [node],
      };
      return undefined;
    }
    return Math.max(0, value);
  }

  private valueOf(value: ValueNode): unknown {
    if (value.kind === Kind.INT || value.kind === Kind.FLOAT) return Number(value.value);
    if (value.kind === Kind.VARIABLE) return this.variables?.get(value.name.value);
    return undefined;
  }
}

/** Variable values by name: the request's, or the definitions' defaults when the request has none. */
function variableValues(
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | undefined,
): Map<string, unknown> {
  const values = new Map<string, unknown>();
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const given = variables?.[name];
    if (given !== undefined && given !== null) values.set(name, given);
    else if (definition.defaultValue?.kind === Kind.INT) values.set(name, Number(definition.defaultValue.value));
  }
  return values;
}

/** Search fields (`TList`, `TConnection`, reverse reference lists) are the ones with `_sort`. */
function isSearchField(field: GraphQLField<unknown, unknown>): boolean {
  return field.args.some((arg) => arg.name === '_sort');
}

function fieldOf(type: GraphQLNamedType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (!isObjectType(type) && !isInterfaceType(type)) return undefined;
  return type.getFields()[name];
}

function rootType(schema: GraphQLSchema, operation: OperationDefinitionNode): GraphQLNamedType | undefined {
  if (operation.operation === 'query') return schema.getQueryType() ?? undefined;
  if (operation.operation === 'mutation') return schema.getMutationType() ?? undefined;
  return schema.getSubscriptionType() ?? undefined;
}

