import {
  Kind,
  visit,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationContext,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Config } from '../config.js';
import { issue, outcome, OperationOutcomeError } from '../fhir/outcome.js';
import { CostAnalysis, ELEMENT_LIST_ESTIMATE, OPERATION_FIELD_COST, SEARCH_PAGE_ESTIMATE, type LimitViolation } from './cost.js';
import { findOperation, fragmentsOf } from './documents.js';
import { outcomeToGraphQLError } from './errors.js';

/** What a query may ask for; from the GRAPHQL_* settings. */
export interface QueryLimits {
  readonly maxDepth: number;
  readonly maxCost: number;
  readonly maxListSize: number;
  readonly introspection: boolean;
  readonly maxOperationFields: number;
}

/** `__schema` fields one query may hold: each answers with the whole schema (megabytes). */
export const MAX_SCHEMA_FIELDS = 1;
/** `__type` fields one query may hold: a client asking for a few types does not need the whole schema. */
export const MAX_TYPE_FIELDS = 10;

export function queryLimits(config: Config): QueryLimits {
  return {
    maxDepth: config.graphqlMaxDepth,
    maxCost: config.graphqlMaxCost,
    maxListSize: config.graphqlMaxListSize,
    introspection: config.graphqlIntrospection,
    maxOperationFields: config.graphqlMaxOperationFields,
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
  const analysis = new CostAnalysis(schema as GraphQLSchema, fragment, limits.maxListSize, variableValues(operation, variables));
  const measure = analysis.selectionSet(operation.selectionSet, root, undefined);
  if (analysis.violation) return analysis.violation;
  if (measure.operations > limits.maxOperationFields) {
    return {
      message: `The query has ${measure.operations} operation fields (aliases included), the limit is ${limits.maxOperationFields}: each runs a FHIR operation`,
      nodes: [operation],
    };
  }
  if (measure.schemaFields > MAX_SCHEMA_FIELDS || measure.typeFields > MAX_TYPE_FIELDS) {
    return {
      message:
        `The query has ${measure.schemaFields} __schema and ${measure.typeFields} __type fields (aliases included), ` +
        `the limit is ${MAX_SCHEMA_FIELDS} __schema and ${MAX_TYPE_FIELDS} __type fields: ask for the schema once`,
      nodes: [operation],
    };
  }
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
        `without _count, ${ELEMENT_LIST_ESTIMATE} for a repeating element without _count; an operation field costs ` +
        `${OPERATION_FIELD_COST}, and the lists of its answer count as its count argument, else ${limits.maxListSize} items)`,
      nodes: [operation],
    };
  }
  return undefined;
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

function rootType(schema: GraphQLSchema, operation: OperationDefinitionNode): GraphQLNamedType | undefined {
  if (operation.operation === 'query') return schema.getQueryType() ?? undefined;
  if (operation.operation === 'mutation') return schema.getMutationType() ?? undefined;
  return schema.getSubscriptionType() ?? undefined;
}

