import { getOperationAST, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { reshapesResults } from './directives.js';

/**
 * Answers of introspection operations, kept per schema, parsed document (yoga's parser cache gives
 * the same object for the same text), operation name and variables. An operation whose root fields
 * are all `__schema`, `__type` or `__typename` reads the schema only, so its answer is the same for
 * every caller and lasts as long as the schema (built once per process). GraphiQL and code
 * generators send the same introspection query over and over, and executing it costs a lot of CPU
 * for the 13 MB answer (measured: see bench/RESULTS.md). Answers with errors are not kept. Whether
 * introspection is allowed at all is decided before execution (limits.ts), so a disabled server
 * never reaches this.
 */
export function useIntrospectionCache(): Plugin {
  const answers = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, ExecutionResult>>>();
  return {
    onExecute({ args, setResultAndStopExecution }) {
      // A reshaped answer (@flatten...) is reshaped by the directives' own hook after this one: not kept.
      if (!isIntrospectionOnly(args.document, args.operationName) || reshapesResults(args.document)) return undefined;
      let bySchema = answers.get(args.schema);
      if (!bySchema) answers.set(args.schema, (bySchema = new WeakMap()));
      let byRequest = bySchema.get(args.document);
      if (!byRequest) bySchema.set(args.document, (byRequest = new Map()));
      const kept = byRequest;
      const key = JSON.stringify([args.operationName ?? null, args.variableValues ?? null]);
      const answer = kept.get(key);
      if (answer) {
        setResultAndStopExecution(answer);
        return undefined;
      }
      return {
        onExecuteDone({ result }) {
          if (!isSingleResult(result) || result.errors?.length) return;
          // `__type(name: $name)` has one answer per name: a client asking for ever new names starts the list over.
          if (kept.size >= MAX_ANSWERS_PER_DOCUMENT) kept.clear();
          kept.set(key, result);
        },
      };
    },
  };
}

const MAX_ANSWERS_PER_DOCUMENT = 100;

const INTROSPECTION_FIELDS = new Set(['__schema', '__type', '__typename']);

/** Whether the operation is a query whose root selections are all introspection fields (no fragments or directives at the root). */
function isIntrospectionOnly(document: DocumentNode, operationName: string | null | undefined): boolean {
  const operation = getOperationAST(document, operationName);
  if (!operation || operation.operation !== 'query') return false;
  const selections = operation.selectionSet.selections;
  return (
    selections.length > 0 &&
    selections.every((selection) => selection.kind === 'Field' && INTROSPECTION_FIELDS.has(selection.name.value) && !selection.directives?.length) &&
    selections.some((selection) => selection.kind === 'Field' && selection.name.value !== '__typename')
  );
}

function isSingleResult(result: unknown): result is ExecutionResult {
  return typeof result === 'object' && result !== null && !(Symbol.asyncIterator in result);
}
