import { assertJsonDepth } from '../fhir/json-limits.js';
import { errors } from '../fhir/outcome.js';
import type { FhirRequest, RequestBody } from './types.js';

/** A body that is already a value (a Bundle entry's resource, a GraphQL argument). */
export function valueBody(value: unknown): RequestBody {
  return {
    json: () => Promise.resolve(value),
    text: () => Promise.resolve(value === undefined ? '' : JSON.stringify(value)),
    bytes: () => Promise.resolve(new TextEncoder().encode(value === undefined ? '' : JSON.stringify(value))),
  };
}

/** A body that arrives as text: parsed when asked, once. */
export function textBody(readText: () => Promise<string>, readBytes: () => Promise<Uint8Array>): RequestBody {
  let parsed: Promise<unknown> | undefined;
  return {
    json: () => (parsed ??= readText().then(parseJson)),
    text: readText,
    bytes: readBytes,
  };
}

/** JSON text of a request, refused (400) when it is not JSON or is nested too deep for what walks it next. */
function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw errors.invalid(`The request body is not valid JSON: ${(error as Error).message}`);
  }
  assertJsonDepth(value);
  return value;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The bytes of a FHIR JSON body as text (a leading byte order mark dropped). Bytes that are not
 * UTF-8 are refused (400) rather than stored as U+FFFD.
 */
export function utf8Text(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw errors.invalid('The request body is not valid UTF-8: JSON bodies must be encoded in UTF-8');
  }
}

/** The body of a write: JSON that must be there. */
export async function requiredJsonBody(req: FhirRequest): Promise<unknown> {
  const body = req.body ? await req.body.json() : undefined;
  if (body === undefined) throw errors.invalid('The request body is empty: send a JSON resource');
  return body;
}

/** An optional JSON body (operations: an empty POST means no input). */
export async function optionalJsonBody(req: FhirRequest): Promise<unknown> {
  return req.body ? req.body.json() : undefined;
}

export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const type = header.split(';')[0].trim().toLowerCase();
  return type === 'application/fhir+json' || type === 'application/json';
}
