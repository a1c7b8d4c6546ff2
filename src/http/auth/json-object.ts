import { errors } from '../../fhir/outcome.js';
import type { HonoContext } from '../route.js';

/**
 * The JSON object an identity endpoint's body must be; `expected` names its fields for the 400.
 * Valid JSON that is no object (`null`, an array, a string) is refused too: a handler reading
 * `body.email` of `null` failed with a 500.
 */
export async function jsonObject(c: HonoContext, expected: string): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw errors.invalid(`Send a JSON object with ${expected}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw errors.invalid(`Send a JSON object with ${expected}`);
  return body as Record<string, unknown>;
}
