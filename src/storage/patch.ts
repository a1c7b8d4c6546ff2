import fastJsonPatch from 'fast-json-patch';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';

const { applyPatch, validate, JsonPatchError } = fastJsonPatch;

/**
 * Applies an RFC 6902 JSON Patch to a copy of the resource. A malformed patch, a failed `test`
 * or a path that does not exist is the client's error (400), never a partial change.
 */
export function applyJsonPatch(resource: Resource, operations: unknown): Resource {
  if (!Array.isArray(operations)) {
    throw errors.invalid('A JSON Patch body must be an array of operations');
  }
  const copy = structuredClone(resource);
  try {
    const problem = validate(operations, copy);
    if (problem) throw problem;
    return applyPatch(copy, operations, false, true).newDocument as Resource;
  } catch (error) {
    if (error instanceof JsonPatchError) {
      const index = typeof error.index === 'number' ? `[${error.index}]` : '';
      throw errors.invalid(`Invalid JSON Patch operation${index}: ${describe(error.name)}`, `Patch${index}`);
    }
    throw errors.invalid(`Invalid JSON Patch: ${(error as Error).message}`);
  }
}

function describe(name: string): string {
  const messages: Record<string, string> = {
    SEQUENCE_NOT_AN_ARRAY: 'the patch must be an array',
    OPERATION_NOT_AN_OBJECT: 'each operation must be an object',
    OPERATION_OP_INVALID: 'op must be add, remove, replace, move, copy or test',
    OPERATION_PATH_INVALID: 'path must be a JSON Pointer string',
    OPERATION_FROM_REQUIRED: 'move and copy need "from"',
    OPERATION_VALUE_REQUIRED: 'add, replace and test need "value"',
    OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED: 'value must be JSON',
    OPERATION_PATH_CANNOT_ADD: 'the parent of path does not exist',
    OPERATION_PATH_UNRESOLVABLE: 'path does not exist in the resource',
    OPERATION_FROM_UNRESOLVABLE: 'from does not exist in the resource',
    OPERATION_PATH_ILLEGAL_ARRAY_INDEX: 'array index is not a number',
    OPERATION_VALUE_OUT_OF_BOUNDS: 'array index is out of bounds',
    TEST_OPERATION_FAILED: 'test failed: the resource does not hold the expected value',
  };
  return messages[name] ?? name;
}
