import { versionOfTag } from '../fhir/etag.js';
import { errors } from '../fhir/outcome.js';
import type { FhirRequest } from './types.js';

export const FHIR_JSON = 'application/fhir+json';
const JSON_TYPES = new Set(['application/fhir+json', 'application/json', 'application/json+fhir']);

interface MediaRange {
  type: string;
  q: number;
}

/** Parses an Accept header as a list of media ranges with their quality (RFC 9110 12.5.1). */
export function parseAccept(header: string | null | undefined): MediaRange[] {
  if (!header) return [];
  return header
    .split(',')
    .map((part) => {
      const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
      const q = params.find((p) => p.startsWith('q='));
      return { type, q: q ? Number(q.slice(2)) : 1 };
    })
    .filter((range) => range.type.length > 0 && range.q > 0);
}

/** True when the client accepts FHIR JSON (explicitly, or through a wildcard). */
export function acceptsFhirJson(ranges: MediaRange[]): boolean {
  if (ranges.length === 0) return true;
  return ranges.some((r) => JSON_TYPES.has(r.type) || r.type === '*/*' || r.type === 'application/*');
}

/** True when FHIR JSON is named explicitly (not through a wildcard): Binary reads use it. */
export function explicitlyAcceptsFhirJson(ranges: MediaRange[]): boolean {
  return ranges.some((r) => JSON_TYPES.has(r.type));
}

/**
 * Decides the response format from `_format` and Accept. Flint speaks JSON only: asking for XML or
 * anything else gets 406 saying so.
 */
export function assertJsonAcceptable(format: string | null, accept: string | null): void {
  if (format !== null) {
    const value = format.toLowerCase().split(';')[0].trim();
    if (value === 'json' || JSON_TYPES.has(value)) return;
    throw errors.notAcceptable(`_format=${format} is not supported: this server returns JSON (application/fhir+json)`);
  }
  if (!acceptsFhirJson(parseAccept(accept))) {
    throw errors.notAcceptable(`Accept: ${accept} cannot be satisfied: this server returns application/fhir+json`);
  }
}

/**
 * assertJsonAcceptable for a request's `_format` and Accept. Writes check it before they write: a
 * create asking for XML was made, and answered in JSON, while a read asking the same got 406.
 */
export function assertAnswerAcceptable(req: FhirRequest): void {
  assertJsonAcceptable(req.query.get('_format'), req.header('accept') ?? null);
}

const FHIR_JSON_TYPES = new Set(['application/fhir+json', 'application/json+fhir']);

/**
 * Which JSON a client asked for, where a route answers plain JSON and FHIR JSON differently
 * (`$versions`): `_format` decides (`json` and the FHIR media types are FHIR, `application/json` is
 * plain), else the Accept range of highest quality that names one (FHIR on a tie); a wildcard or
 * no Accept at all gets plain JSON. XML and other types are 406, as everywhere.
 */
export function requestedJsonKind(format: string | null, accept: string | null): 'fhir' | 'plain' {
  assertJsonAcceptable(format, accept);
  if (format !== null) return format.toLowerCase().split(';')[0].trim() === 'application/json' ? 'plain' : 'fhir';
  const ranges = parseAccept(accept);
  const quality = (types: Set<string>) => Math.max(0, ...ranges.filter((r) => types.has(r.type)).map((r) => r.q));
  const fhir = quality(FHIR_JSON_TYPES);
  return fhir > 0 && fhir >= quality(new Set(['application/json'])) ? 'fhir' : 'plain';
}

/**
 * The one rule for FHIR request bodies (resources, Bundles, JSON Patches, operation inputs): the
 * Content-Type says which JSON it is and any charset is UTF-8; anything else, or no Content-Type
 * at all, is 415. Binary's raw bytes and empty operation inputs are decided by their handlers.
 */
export function assertJsonContentType(contentType: string | null | undefined, allowed = JSON_TYPES): void {
  const expected = [...allowed].join(' or ');
  if (!contentType) throw errors.unsupportedMediaType(`The request body has no Content-Type: send ${expected}`);
  const [mediaType, ...parameters] = contentType.split(';');
  const type = mediaType.trim().toLowerCase();
  if (!allowed.has(type)) {
    throw errors.unsupportedMediaType(`Content-Type ${type} is not supported here: send ${expected}`);
  }
  const charset = charsetOf(parameters);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw errors.unsupportedMediaType(`charset=${charset} is not supported: FHIR JSON is UTF-8 (send charset=utf-8 or no charset)`);
  }
}

function charsetOf(parameters: string[]): string | undefined {
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=', 2);
    if (name.trim().toLowerCase() === 'charset') return value.trim().replace(/^"|"$/g, '').toLowerCase();
  }
  return undefined;
}

export const JSON_PATCH_TYPES = new Set(['application/json-patch+json']);

export type PreferReturn = 'minimal' | 'representation' | 'OperationOutcome';

/** Reads `Prefer: return=...` from a Prefer header that may hold several preferences. */
export function preferReturn(header: string | null | undefined): PreferReturn {
  if (!header) return 'representation';
  for (const part of header.split(/[,;]/)) {
    const [key, value] = part.split('=').map((s) => s.trim().replace(/^"|"$/g, ''));
    if (key.toLowerCase() !== 'return' || !value) continue;
    if (value === 'minimal' || value === 'representation') return value;
    if (value.toLowerCase() === 'operationoutcome') return 'OperationOutcome';
  }
  return 'representation';
}

/** Parses If-Match: `W/"3"`, `"3"` or `3` all name version 3. */
export function parseIfMatch(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const version = versionOfTag(header);
  if (version === undefined) throw errors.invalid(`Malformed If-Match header "${header}": use W/"<versionId>"`, 'If-Match');
  return version;
}
