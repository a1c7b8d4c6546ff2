import { ID_SOURCE } from '../fhir/ids.js';
import { isRecord } from '../fhir/types.js';

/**
 * How `Project/$clone` renames what its copies say of each other: every string that names a
 * cloned resource, by the map from `Type/sourceId` to the clone's id. Strings naming anything else
 * (resources left out of the clone, other servers, `%patient`-style variables) are kept as they are.
 */

/**
 * Rewrites every string that names a cloned resource: `reference` values (`Type/id`, with a
 * `_history` suffix or as an absolute URL of this server), attachment `url`s of Binaries, the
 * values of search criteria (an AccessPolicy rule's, a Subscription's), and meta's references.
 */
export function referenceRewriter(ids: Map<string, string>, fhirBase: string): <T>(value: T) => T {
  const pattern = new RegExp(`^((?:.*/)?)([A-Z][A-Za-z]+)/(${ID_SOURCE})((?:/_history/.*)?)$`);
  const mapString = (text: string): string => {
    const match = pattern.exec(text);
    if (!match) return text;
    const [, prefix, type, id] = match;
    if (prefix !== '' && prefix !== `${fhirBase}/`) return text;
    const next = ids.get(`${type}/${id}`);
    // A version-specific reference points at the clone's current version (its only one).
    return next ? `${prefix}${type}/${next}` : text;
  };
  const walk = (value: unknown, key?: string): unknown => {
    if (Array.isArray(value)) return value.map((item) => walk(item, key));
    if (isRecord(value)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = k === 'meta' ? metaOfCopy(v, mapString) : walk(v, k);
      return out;
    }
    if (typeof value === 'string' && (key === 'reference' || key === 'url')) return mapString(value);
    if (typeof value === 'string' && key === 'criteria') return criteriaOfCopy(value, ids, mapString);
    return value;
  };
  // The walk keeps every value's shape: strings stay strings, meta only loses optional elements.
  return <T>(value: T): T => walk(value) as T;
}

/**
 * Search criteria (`Observation?subject=Patient/123`, `Patient?_compartment=Organization/9`) as
 * the copy holds them: each value (one of a comma-separated list) that names a cloned resource
 * names its copy, and so does an `_id` value of a cloned resource of the criteria's type. Left as
 * they were, they would name resources that are not in the clone: an AccessPolicy rule of the
 * clone would grant nothing, a Subscription would never fire. Values are read as the server reads
 * criteria (URL-decoded: `subject=Patient%2F123` names Patient/123 too); a parameter none of whose
 * values changed is kept byte for byte, a renamed one percent-encoded as it was.
 */
function criteriaOfCopy(criteria: string, ids: Map<string, string>, mapString: (text: string) => string): string {
  const question = criteria.indexOf('?');
  if (question < 0) return criteria;
  const type = criteria.slice(0, question);
  const query = criteria
    .slice(question + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals < 0) return pair;
      const [[name, value]] = new URLSearchParams(pair);
      const values = value.split(',');
      const renamed = values.map((one) => (name === '_id' ? (ids.get(`${type}/${one}`) ?? one) : mapString(one)));
      if (renamed.every((one, i) => one === values[i])) return pair;
      const rawValue = pair.slice(equals + 1);
      const encoded = rawValue === value ? renamed : renamed.map(encodeURIComponent);
      return `${pair.slice(0, equals)}=${encoded.join(',')}`;
    });
  return `${type}?${query.join('&')}`;
}

/** The references meta may hold: its author, and the accounts (and compartments) it is assigned to. */
const META_REFERENCES = ['account', 'accounts', 'author', 'compartment'] as const;

/**
 * The copy's meta: without the source's version, and with its references naming the cloned
 * resources where those were cloned. A Subscription delivers what its author's membership in its
 * project may read (src/events/author-access.ts): kept as it was, the author of a cloned profile
 * would have no membership in the clone and its Subscriptions would deliver nothing. Accounts
 * decide who reads the copy (an AccessPolicy's `_compartment` criteria, indexed from them): kept
 * as they were, they would name accounts the clone does not have.
 */
function metaOfCopy(meta: unknown, mapString: (text: string) => string): unknown {
  if (!isRecord(meta)) return meta;
  const { versionId: _v, lastUpdated: _l, project: _p, ...rest } = meta;
  const renamed = (reference: unknown) =>
    isRecord(reference) && typeof reference.reference === 'string' ? { ...reference, reference: mapString(reference.reference) } : reference;
  for (const key of META_REFERENCES) {
    const value = rest[key];
    if (value !== undefined) rest[key] = Array.isArray(value) ? value.map(renamed) : renamed(value);
  }
  return rest;
}
