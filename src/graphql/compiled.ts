import {
  getLocation,
  getNamedType,
  getOperationAST,
  isInputObjectType,
  typeFromAST,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { makeExecute, type GraphQLParams, type Plugin } from 'graphql-yoga';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { reshapesResults } from './directives.js';
import { countsFromVariables } from './limits.js';
import type { PreparedOperations } from './prepared.js';

/**
 * Compiled execution (graphql-jit) for the queries clients repeat. graphql-js interprets a query
 * field by field: for every field of every item it builds a resolve info, coerces arguments and
 * tracks promises, and its results are dictionary-mode objects that JSON.stringify serialises
 * slowly. For a list of 100 Observations with their subjects (1,500 fields) that is a large CPU
 * cost and most of the garbage collection of the request (measured: see bench/RESULTS.md).
 * graphql-jit compiles the operation once into a function that does the same work with plain
 * objects.
 *
 * Compiled are queries that have already run once (COMPILE_AFTER executions of the same parsed
 * document on the same schema: a document run once does not pay the compilation, and a client
 * sending ever new documents cannot make the server compile each), and whose variables are all of
 * scalar or enum types: graphql-jit generates coercion code for the whole input type, which the
 * recursive FHIR input types (Extension in Extension...) make unbounded. Mutations and
 * subscriptions are never compiled. Everything else runs through the standard executor, and the
 * compiled function runs after the same plugins (limits, directives, instance root, errors).
 */
export const COMPILE_AFTER = 2;

/** envelop's execute function (graphql's `execute` signature), as plugins receive and replace it. */
type ExecuteFunction = Parameters<NonNullable<Plugin['onExecute']>>[0]['executeFn'];

interface Entry {
  runs: number;
  /** The compiled operation; null when the document is not compiled (not eligible, or compilation failed). */
  compiled: CompiledQuery | null | undefined;
}

/**
 * `prepared`: where to record the operations that may skip yoga from now on (prepared.ts), and the
 * full schema (an instance-level request runs with another).
 */
export function useCompiledQueries(prepared?: { operations: PreparedOperations; schema: GraphQLSchema }): Plugin {
  // By schema (instance-level requests have one per resource type), parsed document (yoga's parser
  // cache gives the same object for the same text) and operation name.
  const entries = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, Entry>>>();
  const entryOf = (schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): Entry => {
    let bySchema = entries.get(schema);
    if (!bySchema) entries.set(schema, (bySchema = new WeakMap()));
    let byOperation = bySchema.get(document);
    if (!byOperation) bySchema.set(document, (byOperation = new Map()));
    let entry = byOperation.get(operationName ?? '');
    if (!entry) byOperation.set(operationName ?? '', (entry = { runs: 0, compiled: undefined }));
    return entry;
  };
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const entry = entryOf(args.schema, args.document, args.operationName);
      if (entry.compiled === null) return;
      if (entry.compiled === undefined) {
        entry.runs += 1;
        if (entry.runs < COMPILE_AFTER) return;
        entry.compiled = compile(args.schema, args.document, args.operationName ?? undefined);
        if (entry.compiled === null) return;
      }
      setExecuteFn(compiledExecute(entry.compiled, executeFn));
      // Prepared only when no plugin has work left per request: the limits' variable check, the
      // directives' reshaping and the instance root (another schema) would be skipped.
      if (prepared && args.schema === prepared.schema && !countsFromVariables(args.document) && !reshapesResults(args.document)) {
        const params = (args.contextValue as { params?: GraphQLParams }).params;
        if (typeof params?.query === 'string') prepared.operations.record(params.query, args.operationName, { compiled: entry.compiled });
      }
    },
  };
}

/**
 * The compiled operation as an execute function, its result shaped as the standard executor's.
 * Variables that do not coerce stop a compiled query before any resolver runs, with errors of
 * graphql-jit's own (no locations, no HTTP status): the standard executor then runs instead, for
 * its request error.
 */
function compiledExecute(compiled: CompiledQuery, standard: ExecuteFunction): ExecuteFunction {
  return makeExecute((args) => {
    const finish = (result: ExecutionResult) => {
      if (!('data' in result)) return standard(args);
      return asStandardResult(withFieldNodes(result, args.document));
    };
    const result = compiled.query(args.rootValue, args.contextValue, args.variableValues ?? {});
    return result instanceof Promise ? result.then(finish) : finish(result);
  });
}

/** `{ errors, data }` in the standard executor's key order (clients see the JSON text). */
function asStandardResult(result: ExecutionResult): ExecutionResult {
  if (!result.errors?.length) return result;
  const { errors, data, ...rest } = result;
  return { errors, data, ...rest };
}

function compile(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined): CompiledQuery | null {
  const operation = getOperationAST(document, operationName);
  if (!operation || operation.operation !== 'query' || hasInputObjectVariables(schema, operation)) return null;
  const compiled = compileQuery(schema, document, operationName);
  return isCompiledQuery(compiled) ? compiled : null;
}

/**
 * graphql-jit's field errors have `locations` but not the field `nodes` graphql-js gives them, and
 * yoga rebuilds every error from its nodes when it writes the response (dropping the locations):
 * the nodes are found again by their location in the document.
 */
function withFieldNodes(result: ExecutionResult, document: DocumentNode): ExecutionResult {
  if (!result.errors?.length) return result;
  const byLocation = fieldNodesByLocation(document);
  for (const error of result.errors) {
    if (error.nodes?.length || !error.locations?.length) continue;
    const nodes = error.locations.map((location) => byLocation.get(`${location.line}:${location.column}`));
    if (nodes.every((node): node is FieldNode => node !== undefined)) {
      Object.defineProperty(error, 'nodes', { value: nodes, configurable: true, writable: true });
    }
  }
  return result;
}

const fieldsByDocument = new WeakMap<DocumentNode, Map<string, FieldNode>>();

function fieldNodesByLocation(document: DocumentNode): Map<string, FieldNode> {
  let fields = fieldsByDocument.get(document);
  if (!fields) {
    const found = new Map<string, FieldNode>();
    visit(document, {
      Field(node) {
        if (!node.loc) return;
        const { line, column } = getLocation(node.loc.source, node.loc.start);
        found.set(`${line}:${column}`, node);
      },
    });
    fieldsByDocument.set(document, (fields = found));
  }
  return fields;
}

function hasInputObjectVariables(schema: GraphQLSchema, operation: OperationDefinitionNode): boolean {
  return (operation.variableDefinitions ?? []).some((definition) => {
    const type = typeFromAST(schema, definition.type);
    return type === undefined || isInputObjectType(getNamedType(type));
  });
}
