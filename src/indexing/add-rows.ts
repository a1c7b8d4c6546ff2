import type { SearchParameter } from '../fhir/definitions.js';
import type { IndexRows, ReferenceRow } from './row-types.js';
import { dateRange } from './dates.js';
import { parseCanonical, parseReference } from './references.js';
import { capUtf8, clean, MAX_INDEXED_SYSTEM_BYTES, MAX_INDEXED_VALUE_BYTES, normalise, normaliseForIndex } from './text.js';
import type { TypedValue } from './typed-value.js';
import { ADDRESS_PARTS, NAME_PARTS } from './union-rows.js';

/**
 * Values to index rows, by search parameter type and the value's FHIR type, following
 * http://hl7.org/fhir/R4/search.html. A value of a type or shape a parameter type has no rule for
 * gives no row: data is never rejected here, validation is not the indexer's job.
 */

type Json = Record<string, unknown>;
type RowAdder = (rows: IndexRows, code: string, type: string | undefined, value: unknown, omitParts?: ReadonlySet<string>) => void;

const QUANTITY_TYPES = new Set(['Quantity', 'Age', 'Duration', 'Distance', 'Count', 'SimpleQuantity', 'MoneyQuantity']);
const CONTACT_POINT_SYSTEMS = new Set(['phone', 'fax', 'email', 'pager', 'url', 'sms', 'other']);
const DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const ISO_4217 = 'urn:iso:std:iso:4217';

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : value === undefined ? [] : [value];
}

/** The FHIR type a JSON object most likely has, when evaluation could not tell. */
function shapeOf(value: Json): string | undefined {
  if ('resourceType' in value) return 'Resource';
  if ('reference' in value) return 'Reference';
  if ('coding' in value) return 'CodeableConcept';
  if ('family' in value || 'given' in value || 'prefix' in value || 'suffix' in value) return 'HumanName';
  if (['line', 'city', 'district', 'state', 'postalCode', 'country'].some((key) => key in value)) return 'Address';
  if ('currency' in value) return 'Money';
  if ('start' in value || 'end' in value) return 'Period';
  if ('event' in value || 'repeat' in value) return 'Timing';
  if ('low' in value || 'high' in value) return 'Range';
  if (typeof value.value === 'number') return 'Quantity';
  if ('code' in value) return 'Coding';
  if (typeof value.value === 'string') {
    return CONTACT_POINT_SYSTEMS.has(value.system as string) ? 'ContactPoint' : 'Identifier';
  }
  if ('system' in value) return 'Coding';
  if ('text' in value) return 'CodeableConcept';
  return undefined;
}

function typeOf(item: TypedValue): string | undefined {
  const { type, value } = item;
  if (type && type !== 'Element' && type !== 'BackboneElement') return type;
  return isJson(value) ? shapeOf(value) : undefined;
}

// string ------------------------------------------------------------------------------------------

function pushString(rows: IndexRows, code: string, raw: unknown): void {
  const exact = clean(raw);
  if (exact) rows.string.push({ code, value: normaliseForIndex(exact), exact });
}

const addString: RowAdder = (rows, code, type, value, omitParts) => {
  if (typeof value === 'string') return pushString(rows, code, value);
  if (!isJson(value)) return;
  const parts = type === 'HumanName' ? NAME_PARTS : type === 'Address' ? ADDRESS_PARTS : [];
  for (const part of parts) {
    if (omitParts?.has(part)) continue;
    for (const text of list(value[part])) pushString(rows, code, text);
  }
};

// token -------------------------------------------------------------------------------------------

function pushToken(rows: IndexRows, code: string, system: unknown, value: unknown, text: unknown): void {
  const row = {
    code,
    system: capped(clean(system), MAX_INDEXED_SYSTEM_BYTES),
    value: capped(clean(value), MAX_INDEXED_VALUE_BYTES),
    text: null as string | null,
  };
  const display = clean(text);
  if (display) row.text = normalise(display);
  if (row.system !== null || row.value !== null || row.text !== null) rows.token.push(row);
}

function pushCodeableConcept(rows: IndexRows, code: string, concept: Json): void {
  // The concept's text stands in for the display of codings that have none, so `:text` finds them.
  for (const coding of list(concept.coding)) {
    if (isJson(coding)) pushToken(rows, code, coding.system, coding.code, clean(coding.display) ?? concept.text);
  }
  if (clean(concept.text)) pushToken(rows, code, null, null, concept.text);
}

const addToken: RowAdder = (rows, code, type, value, omitParts) => {
  if (typeof value === 'string') return pushToken(rows, code, null, value, null);
  if (typeof value === 'boolean') return pushToken(rows, code, null, String(value), null);
  if (typeof value === 'number') return pushToken(rows, code, null, String(value), null);
  if (!isJson(value)) return;
  switch (type) {
    case 'Coding':
      return pushToken(rows, code, value.system, value.code, value.display);
    case 'CodeableConcept':
      return pushCodeableConcept(rows, code, value);
    case 'Identifier':
      return pushToken(rows, code, value.system, value.value, (value.type as Json | undefined)?.text);
    case 'ContactPoint':
      // search.html maps ContactPoint to ContactPoint.value only: the system (phone, email) is no
      // namespace for the value, and the parameters split by system with `where(system=...)`
      // (`omitParts`: the systems whose parameters store these rows, union-rows.ts).
      if (typeof value.system === 'string' && omitParts?.has(value.system)) return;
      if (clean(value.value)) pushToken(rows, code, null, value.value, null);
      return;
  }
};

// date --------------------------------------------------------------------------------------------

function pushDate(rows: IndexRows, code: string, start: unknown, end: unknown): void {
  const from = typeof start === 'string' ? dateRange(start.trim()) : undefined;
  const to = typeof end === 'string' ? dateRange(end.trim()) : undefined;
  if (from || to) rows.date.push({ code, start: from?.start ?? null, end: to?.end ?? null });
}

const DATE_TYPES = new Set(['date', 'dateTime', 'instant']);

const addDate: RowAdder = (rows, code, type, value) => {
  // A string choice (CarePlan scheduledString "2024") is free text even when it looks like a date.
  if (typeof value === 'string') {
    if (type === undefined || DATE_TYPES.has(type)) pushDate(rows, code, value, value);
    return;
  }
  if (!isJson(value)) return;
  if (type === 'Period') return pushDate(rows, code, value.start, value.end);
  if (type === 'Timing') for (const event of list(value.event)) pushDate(rows, code, event, event);
};

// number and quantity -----------------------------------------------------------------------------

/** A decimal as text: JSON numbers as JavaScript prints them, numeric text as written. */
function decimalText(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'string' && DECIMAL.test(value.trim())) return value.trim();
  return undefined;
}

const addNumber: RowAdder = (rows, code, type, value) => {
  if (type === 'Range' && isJson(value)) {
    // RiskAssessment `probability` (probabilityRange): the interval low..high, units aside.
    const bounds = rangeBounds(value);
    if (bounds) rows.number.push({ code, value: bounds.low ?? '-Infinity', high: bounds.high ?? 'Infinity' });
    return;
  }
  const text = decimalText(value);
  if (text !== undefined) rows.number.push({ code, value: text });
};

const addQuantity: RowAdder = (rows, code, type, value) => {
  if (!isJson(value)) return;
  if (type === 'Range') return pushRange(rows, code, value);
  if (typeof value.value !== 'number') return;
  const text = decimalText(value.value);
  if (text === undefined) return;
  if (type === 'Money') {
    rows.quantity.push({ code, value: text, system: ISO_4217, unit: clean(value.currency) ?? null });
  } else if (type && QUANTITY_TYPES.has(type)) {
    const unit = unitOf(value) ?? null;
    rows.quantity.push({ code, value: text, system: clean(value.system) ?? null, unit });
  }
};

/**
 * A Range (`onset-age`, `context-quantity`, a quantity component of `context-type-quantity`): its
 * low in `value` and its high in `high`, an open end as -Infinity or Infinity, which the search
 * compares as a range (conditions.ts, numberComparison). The unit and system are those of the first
 * bound that has one, the low's first. A reversed Range (low above high, which rng-2 forbids but
 * nothing rejects) is turned round, as date rows are: the search's index-friendly conditions rely
 * on `value <= high`. A Range without any bound value gives no row.
 */
function pushRange(rows: IndexRows, code: string, range: Json): void {
  const bounds = rangeBounds(range);
  if (!bounds) return;
  const low = isJson(range.low) ? range.low : undefined;
  const high = isJson(range.high) ? range.high : undefined;
  const withUnit = low && (unitOf(low) !== undefined || clean(low.system) !== undefined) ? low : (high ?? low);
  rows.quantity.push({
    code,
    value: bounds.low ?? '-Infinity',
    system: clean(withUnit?.system) ?? null,
    unit: (withUnit && unitOf(withUnit)) ?? null,
    high: bounds.high ?? 'Infinity',
  });
}

/**
 * A Range's bound values as text, in order (a reversed Range turned round), each undefined when that
 * end is open; undefined when neither bound has a value. Shared by quantity and number rows.
 */
function rangeBounds(range: Json): { low?: string; high?: string } | undefined {
  const from = boundText(isJson(range.low) ? range.low : undefined);
  const to = boundText(isJson(range.high) ? range.high : undefined);
  if (from === undefined && to === undefined) return undefined;
  return from !== undefined && to !== undefined && Number(from) > Number(to) ? { low: to, high: from } : { low: from, high: to };
}

/** A Range bound's value as text (JSON numbers only, as for a Quantity: validation made them numbers). */
function boundText(bound: Json | undefined): string | undefined {
  return typeof bound?.value === 'number' ? decimalText(bound.value) : undefined;
}

function unitOf(quantity: Json): string | undefined {
  return clean(quantity.code) ?? clean(quantity.unit);
}

// reference and uri -------------------------------------------------------------------------------

/** Token rows of a reference parameter's Reference.identifier are stored under `<code>:identifier`. */
export const IDENTIFIER_SUFFIX = ':identifier';

const addReference: RowAdder = (rows, code, type, value) => {
  if (typeof value === 'string') {
    const url = clean(value);
    if (url && !url.startsWith('#')) rows.reference.push(cappedReference({ code, ...parseCanonical(url) }));
    return;
  }
  if (!isJson(value) || type !== 'Reference') return;
  // Reference.identifier, for `:identifier`: a token row under a code of its own, so the token
  // index answers it (a reference with only an identifier names no resource: no reference row).
  if (isJson(value.identifier)) {
    const identifier = value.identifier;
    pushToken(rows, `${code}${IDENTIFIER_SUFFIX}`, identifier.system, identifier.value, (identifier.type as Json | undefined)?.text);
  }
  const reference = clean(value.reference);
  const target = reference ? parseReference(reference) : undefined;
  if (target) rows.reference.push(cappedReference({ code, ...target }));
};

const addUri: RowAdder = (rows, code, _type, value) => {
  const uri = clean(value);
  if (uri) rows.uri.push({ code, value: capUtf8(uri, MAX_INDEXED_VALUE_BYTES) });
};

function capped(text: string | undefined, maxBytes: number): string | null {
  return text === undefined ? null : capUtf8(text, maxBytes);
}

function cappedReference(row: ReferenceRow): ReferenceRow {
  return {
    code: row.code,
    targetType: row.targetType,
    targetId: capped(row.targetId ?? undefined, MAX_INDEXED_VALUE_BYTES),
    url: capped(row.url ?? undefined, MAX_INDEXED_VALUE_BYTES),
  };
}

const ADDERS: Partial<Record<SearchParameter['type'], RowAdder>> = {
  string: addString,
  token: addToken,
  date: addDate,
  number: addNumber,
  quantity: addQuantity,
  reference: addReference,
  uri: addUri,
};

/** The parameter types the indexer stores rows for. */
export function isIndexedType(type: SearchParameter['type']): boolean {
  return type in ADDERS;
}

/**
 * Adds the rows for one value of search parameter `code` of type `paramType` (without `omitParts`
 * of a HumanName or Address, nor a ContactPoint of a system in `omitParts`: other parameters hold them).
 */
export function addRows(rows: IndexRows, code: string, paramType: SearchParameter['type'], item: TypedValue, omitParts?: ReadonlySet<string>): void {
  const type = typeOf(item);
  // Data types are capitalised, primitives are not: a string where a HumanName belongs (or an
  // object where a code belongs) is malformed, and indexing it by shape would invent meaning.
  if (type !== undefined && isCapitalised(type) !== isJson(item.value)) return;
  ADDERS[paramType]?.(rows, code, type, item.value, omitParts);
}

function isCapitalised(type: string): boolean {
  const first = type.charCodeAt(0);
  return first >= 65 && first <= 90;
}
