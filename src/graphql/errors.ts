import type { GraphQLError } from 'graphql';
import {
  createGraphQLError,
  isAsyncIterable,
  maskError as yogaMaskError,
  type Plugin,
  type YogaMaskedErrorOpts,
} from 'graphql-yoga';
import { OperationOutcomeError } from '../fhir/outcome.js';
import type { GraphQLContext } from './context.js';

// Errors are recognised by their cause chain (`originalError`) and built with yoga's createGraphQLError,
// never with `instanceof GraphQLError`: under vitest, `graphql` can be loaded twice (ESM and CJS builds),
// and yoga must see our errors as its own GraphQLErrors or it masks them.

export const UNEXPECTED_ERROR_MESSAGE = 'Unexpected error.';

/**
 * An expected error as GraphQL reports it: the OperationOutcome goes in `extensions.resource`.
 * `located` carries the path and source position when the error came from a field.
 * With `withHttp`, yoga answers with the error's HTTP status and headers (for errors before execution,
 * such as a failed authentication); field errors keep the GraphQL status, since other fields may
 * have succeeded.
 */
export function outcomeToGraphQLError(
  error: OperationOutcomeError,
  located?: Pick<GraphQLError, 'nodes' | 'source' | 'positions' | 'path'>,
  withHttp = false,
): GraphQLError {
  return createGraphQLError(error.message, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    path: located?.path,
    extensions: {
      resource: error.outcome,
      ...(withHttp ? { http: { status: error.status, headers: error.headers } } : {}),
    },
  });
}

/**
 * What the client sees of an error: an OperationOutcomeError with its outcome, a GraphQLError raised
 * on purpose as it is, anything else masked as "Unexpected error." (`unexpected` tells which).
 */
export function toClientError(error: unknown): { error: Error; unexpected: boolean } {
  const cause = rootCause(error);
  if (cause instanceof OperationOutcomeError) {
    return { error: outcomeToGraphQLError(cause, isGraphQLErrorLike(error) ? error : undefined), unexpected: false };
  }
  if (isGraphQLErrorLike(cause)) return { error: error as Error, unexpected: false };
  return { error: yogaMaskError(error, UNEXPECTED_ERROR_MESSAGE), unexpected: true };
}

/** For yoga's `maskedErrors`: the errors outside execution (context building, parsing). Yoga logs the masked ones. */
export const maskError: YogaMaskedErrorOpts['maskError'] = (error) => toClientError(error).error;

/**
 * Execution errors, before yoga's masking sees them: each unexpected one is logged with its cause on
 * the request's logger (so with its request id) and masked; OperationOutcomeErrors carry their outcome.
 * They are listed in the order of their fields in the response, not in the order they happened
 * (which follows database timing): the same query on the same data gives the same response.
 */
export function useExecutionErrors(): Plugin<GraphQLContext> {
  return {
    onExecute({ args }) {
      return {
        onExecuteDone({ result, setResult }) {
          if (isAsyncIterable(result) || !result.errors?.length) return;
          const log = (args.contextValue as GraphQLContext).requestContext.log;
          const errors = result.errors.map((error) => {
            const client = toClientError(error);
            if (client.unexpected) {
              log.error({ err: rootCause(error), path: error.path?.join('.') }, 'GraphQL resolver failed');
            }
            return client.error as GraphQLError;
          });
          setResult({ ...result, errors: inResponseOrder(errors, result.data) });
        },
      };
    },
  };
}

/** Errors sorted by their path's place in `data` (errors without a path first); a stable sort otherwise. */
function inResponseOrder(errors: GraphQLError[], data: unknown): GraphQLError[] {
  if (errors.length < 2) return errors;
  return errors
    .map((error, index) => ({ error, index }))
    .sort((a, b) => comparePaths(a.error.path, b.error.path, data) || a.index - b.index)
    .map(({ error }) => error);
}

function comparePaths(a: readonly (string | number)[] | undefined, b: readonly (string | number)[] | undefined, data: unknown): number {
  if (!a || !b) return (a ? 1 : 0) - (b ? 1 : 0);
  let node: unknown = data;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [x, y] = [a[i], b[i]];
    if (x !== y) {
      if (typeof x === 'number' && typeof y === 'number') return x - y;
      // Response keys: in the order the response lists them (the query's order).
      const keys = typeof node === 'object' && node !== null ? Object.keys(node) : [];
      return keys.indexOf(String(x)) - keys.indexOf(String(y));
    }
    node = typeof node === 'object' && node !== null ? (node as Record<string | number, unknown>)[x] : undefined;
  }
  return a.length - b.length;
}

/** The innermost cause of an error that graphql or yoga may have wrapped, possibly several times. */
function rootCause(error: unknown): unknown {
  let current = error;
  while (isGraphQLErrorLike(current) && current.originalError) current = current.originalError;
  return current;
}

function isGraphQLErrorLike(value: unknown): value is GraphQLError {
  return Object.prototype.toString.call(value) === '[object GraphQLError]';
}
