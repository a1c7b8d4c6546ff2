import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { assertJsonDepth, jsonSizeWithin } from '../fhir/json-limits.js';
import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';

const { applyOperation, getValueByPointer, JsonPatchError } = fastJsonPatch;

/** About what a small object or array takes in V8's heap. */
const CONTAINER_BYTES = 64;

/** What one patch may cost: its operations, and the size of what it makes (MAX_BODY_BYTES). */
export interface PatchLimits {
  readonly maxOperations: number;
  readonly maxBytes: number;
}

/**
 * Applies an RFC 6902 JSON Patch to a copy of the resource. A malformed patch, a failed `test`
 * or a path that does not exist is the client's error (400), never a partial change. The work is
 * bounded before it is done: the number of operations, and the bytes that `copy` operations add
 * (each copy can double the document, so a small patch could otherwise fill the heap), measured
 * before each copy; the result must fit in a request body (413).
 */
export function applyJsonPatch(resource: Resource, operations: unknown, limits: PatchLimits): Resource {
  const patch = checkedOperations(operations, limits);
  let document: unknown = structuredClone(resource);
  let growthLeft = limits.maxBytes - jsonSizeWithin(resource, limits.maxBytes);
  patch.forEach((operation, index) => {
    if (isRecord(operation) && operation.op === 'copy') growthLeft -= copiedSize(document, operation, index, growthLeft, limits.maxBytes);
    document = applyOne(document, operation, index);
  });
  if (jsonSizeWithin(document, limits.maxBytes) > limits.maxBytes) {
    throw errors.tooLarge(`The patched resource would exceed the limit of ${limits.maxBytes} bytes (MAX_BODY_BYTES)`);
  }
  return document as Resource;
}

function checkedOperations(operations: unknown, limits: PatchLimits): unknown[] {
  if (!Array.isArray(operations)) {
    throw errors.invalid('A JSON Patch body must be an array of operations');
  }
  if (operations.length > limits.maxOperations) {
    throw errors.invalid(
      `A JSON Patch may hold at most ${limits.maxOperations} operations (MAX_PATCH_OPERATIONS); this one has ${operations.length}`,
      `Patch[${limits.maxOperations}]`,
    );
  }
  assertJsonDepth(operations, 'Patch');
  return operations;
}

/** The bytes a copy adds; refused (413) before copying when they exceed what is left of the limit. */
function copiedSize(document: unknown, operation: Record<string, unknown>, index: number, growthLeft: number, maxBytes: number): number {
  if (typeof operation.from !== 'string') return 0;
  let value: unknown;
  try {
    value = getValueByPointer(document, operation.from);
  } catch {
    return 0; // an unresolvable `from` is reported by applyOne
  }
  // Objects and arrays count as what they take in memory: copying `[{}]` into itself doubles
  // millions of tiny objects long before their text reaches the limit, and copying them is what
  // takes the time.
  const size = jsonSizeWithin(value, Math.max(growthLeft, 0), CONTAINER_BYTES);
  if (size > growthLeft) {
    const text = `JSON Patch operation ${index} (copy) would make the resource larger than the limit of ${maxBytes} bytes (MAX_BODY_BYTES)`;
    throw errors.tooLarge(text, `Patch[${index}]`);
  }
  return size;
}

function applyOne(document: unknown, operation: unknown, index: number): unknown {
  try {
    return applyOperation(document, operation as Operation, true, true, true, index).newDocument;
  } catch (error) {
    // The library reports some problems with index 0 whatever the operation: ours is the index.
    if (error instanceof JsonPatchError) {
      throw errors.invalid(`Invalid JSON Patch operation ${index}: ${describe(error.name)}`, `Patch[${index}]`);
    }
    throw errors.invalid(`Invalid JSON Patch operation ${index}: ${(error as Error).message}`, `Patch[${index}]`);
  }
}

function describe(name: string): string {
  const messages: Record<string, string> = {
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
