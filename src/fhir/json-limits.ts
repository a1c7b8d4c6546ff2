import { errors } from './outcome.js';

/**
 * Deepest nesting of JSON objects and arrays a request may send. JSON.parse itself is not
 * recursive, but JSON.stringify, structuredClone and most walkers are: far beyond any real
 * resource and far below what would exhaust the stack.
 */
export const MAX_JSON_DEPTH = 100;

/** Refuses (400) JSON nested deeper than MAX_JSON_DEPTH, walking with a stack of its own. */
export function assertJsonDepth(value: unknown, expression?: string): void {
  if (!exceedsDepth(value, MAX_JSON_DEPTH)) return;
  throw errors.invalid(`The JSON is nested more than ${MAX_JSON_DEPTH} levels deep (objects and arrays): flatten it`, expression);
}

function exceedsDepth(root: unknown, max: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value: root, depth: 0 }];
  while (pending.length > 0) {
    const { value, depth } = pending.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (typeof child === 'object' && child !== null) pending.push({ value: child, depth: depth + 1 });
    }
  }
  return false;
}

/**
 * The length of `value` as JSON text in UTF-8 bytes (escapes aside), counting no further than
 * just past `limit`: a result above `limit` only says "too large", at a cost bounded by the limit.
 * With `containerBytes`, each object and array counts at least that much: what it takes in memory
 * rather than its two characters of text.
 */
export function jsonSizeWithin(root: unknown, limit: number, containerBytes = 0): number {
  let size = 0;
  const pending: unknown[] = [root];
  while (pending.length > 0 && size <= limit) {
    const value = pending.pop();
    if (typeof value === 'string') size += Buffer.byteLength(value) + 2;
    else if (Array.isArray(value)) {
      size += containerBytes + 1 + Math.max(value.length, 1);
      if (size <= limit) for (const item of value) pending.push(item);
    } else if (typeof value === 'object' && value !== null) {
      size += containerBytes + 1;
      for (const key in value) {
        size += Buffer.byteLength(key) + 4;
        if (size > limit) break;
        pending.push((value as Record<string, unknown>)[key]);
      }
    } else size += String(value).length;
  }
  return size;
}
