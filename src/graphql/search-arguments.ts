import { getSearchParametersFor } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { isRecord } from '../fhir/types.js';
import { MAX_COUNT } from '../search/service.js';

/**
 * GraphQL search arguments as REST search parameters, and the opaque page cursors of a Connection.
 */

export type Args = Record<string, unknown>;

/** Result-control arguments: the rest are search parameters, named by their code with `-` as `_`. */
const CONTROL_ARGS = new Set(['_count', '_offset', '_sort', '_cursor', '_total', '_params']);
/**
 * REST parameters `_params` may not carry: paging and totals have arguments of their own (checked
 * there), and the shape of the answer is the selection set's business.
 */
const RESULT_PARAMETERS = new Set(['_count', '_offset', '_sort', '_cursor', '_total', '_include', '_revinclude', '_summary', '_elements', '_format', '_pretty', '_contained', '_containedType']);

const argumentCodes = new Map<string, Map<string, string>>();

/** Argument name → search parameter code of a type (`general_practitioner` → `general-practitioner`). */
export function codesOf(type: string): Map<string, string> {
  let codes = argumentCodes.get(type);
  if (!codes) {
    codes = new Map(getSearchParametersFor(type).map((param) => [param.code.replace(/-/g, '_'), param.code]));
    codes.set('_filter', '_filter');
    argumentCodes.set(type, codes);
  }
  return codes;
}

/**
 * GraphQL arguments as REST search parameters: one parameter per list value (AND; commas inside a
 * value are OR, as in REST), `_cursor` decoded to the position it stands for. `_count` above the
 * search maximum is refused (REST clamps it; here the client asked for a list size explicitly).
 */
export function searchParams(type: string, args: Args): [string, string][] {
  const params: [string, string][] = [];
  const codes = codesOf(type);
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || value === null || CONTROL_ARGS.has(name)) continue;
    const code = codes.get(name);
    if (!code) throw errors.invalid(`Unknown search parameter "${name}" for ${type}`, name);
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && item !== undefined) params.push([code, String(item)]);
    }
  }
  params.push(...rawParams(args._params));
  params.push(...controlParams(args));
  return params;
}

/** `_params: [{name, value}]`: REST parameters as written in a URL; the search engine checks them. */
export function rawParams(value: unknown): [string, string][] {
  if (!Array.isArray(value)) return [];
  return value.map((item: { name: string; value: string }, index) => {
    const name = item.name.trim();
    const base = name.split(':')[0];
    if (RESULT_PARAMETERS.has(base)) {
      throw errors.invalid(`_params cannot carry ${base}: use the field's own argument or the selection set`, `_params[${index}].name`);
    }
    return [name, item.value];
  });
}

function controlParams(args: Args): [string, string][] {
  const params: [string, string][] = [];
  const count = args._count;
  if (typeof count === 'number') {
    if (count > MAX_COUNT) throw errors.invalid(`_count must be at most ${MAX_COUNT}, not ${count}`, '_count');
    params.push(['_count', String(count)]);
  }
  if (typeof args._offset === 'number') params.push(['_offset', String(args._offset)]);
  if (typeof args._sort === 'string') params.push(['_sort', args._sort]);
  if (typeof args._total === 'string') params.push(['_total', args._total]);
  if (typeof args._cursor === 'string') {
    const position = decodePageCursor(args._cursor);
    if ('offset' in position) {
      if (typeof args._offset === 'number') throw errors.invalid('Use either _cursor or _offset, not both', '_cursor');
      if (position.offset > 0) params.push(['_offset', String(position.offset)]);
    } else {
      params.push(['_cursor', position.cursor]);
    }
  }
  return params;
}

/**
 * A Connection's first/previous/next/last: opaque to clients, who pass one back as `_cursor` with
 * the same search arguments. It stands for an offset (offset paging) or for the search service's own
 * keyset cursor (searches sorted by `_lastUpdated` with `_count` of at least 20), which is signed and
 * tied to the search it came from.
 */
type PagePosition = { offset: number } | { cursor: string };

export function encodePageCursor(position: PagePosition): string {
  const payload = 'offset' in position ? { o: position.offset } : { c: position.cursor };
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

function decodePageCursor(text: string): PagePosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (isRecord(parsed)) {
    if (typeof parsed.o === 'number' && Number.isInteger(parsed.o) && parsed.o >= 0) return { offset: parsed.o };
    if (typeof parsed.c === 'string' && parsed.c !== '') return { cursor: parsed.c };
  }
  throw errors.invalid('Invalid _cursor: pass back the first, previous, next or last value of a Connection', '_cursor');
}
