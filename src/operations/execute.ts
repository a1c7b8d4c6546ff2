import { OperationOutcomeError, outcome, issue } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { decodeBody, encodeOutput, OutputError, type OperationInput } from './parameters.js';
import type { Operation, OperationRequest } from './registry.js';

export interface OperationResult {
  /** The response body: a Parameters resource, or the resource a `return` operation gives. */
  resource: Resource;
  status: number;
}

/**
 * Runs a handler on already-decoded input and encodes its output: the one path every transport
 * (REST, GraphQL) takes. Output that breaks the definition is a server bug: 500, logged.
 */
export async function invokeOperation(operation: Operation, input: OperationInput, request: OperationRequest): Promise<OperationResult> {
  await operation.check?.(input, request);
  const output = await operation.handler(input, request);
  try {
    return { resource: encodeOutput(operation.definition, output), status: operation.successStatus ?? 200 };
  } catch (error) {
    if (!(error instanceof OutputError)) throw error;
    const code = operation.definition.code;
    request.ctx.log.error(
      { operation: `$${code}`, definition: operation.definition.url, problem: error.message },
      `operation $${code} returned output that breaks its OperationDefinition: ${error.message}`,
    );
    throw new OperationOutcomeError(
      outcome([issue('exception', `Operation $${code} failed: its output does not match its OperationDefinition`)]),
      500,
    );
  }
}

/**
 * Runs an operation from a Parameters resource, the way any transport other than REST (GraphQL
 * fields generated from `listOperations()`) calls it: same decoding, same checks, same handler.
 */
export function executeOperation(operation: Operation, parameters: Resource | undefined, request: OperationRequest): Promise<OperationResult> {
  return invokeOperation(operation, decodeBody(operation.definition, parameters), request);
}
