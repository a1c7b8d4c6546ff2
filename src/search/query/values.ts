import { errors } from '../../fhir/outcome.js';
import { dateRange, type DateRange } from '../../indexing/dates.js';

/**
 * Parsing of search values (http://hl7.org/fhir/R4/search.html#ptypes): prefixes, escapes, and
 * the ranges that dates and numbers stand for. Every failure is a 400 naming the parameter.
 */

export const PREFIXES = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap'] as const;
export type Prefix = (typeof PREFIXES)[number];

/** Splits a value at unescaped commas (`\,` is a literal comma); escapes are kept for later parts. */
export function splitOr(value: string): string[] {
  return splitUnescaped(value, ',');
}

/** Splits at unescaped `|` (token system|code, quantity value|system|code). */
export function splitPipe(value: string): string[] {
  return splitUnescaped(value, '|');
}

/** Splits a composite value at unescaped `$` (`code$value`; `\$` is a literal dollar sign). */
export function splitComponents(value: string): string[] {
  return splitUnescaped(value, '$');
}

/** Splits at each `separator` not preceded by a backslash; backslash escapes stay in the parts. */
function splitUnescaped(value: string, separator: string): string[] {
  // Slices rather than a part built a character at a time: a value may be megabytes long.
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const char = value[i];
    if (char === '\\') i++;
    else if (char === separator) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts;
}

export function unescape(value: string): string {
  return value.replace(/\\([\\,|$])/g, '$1');
}

/** A prefix and the rest of the value; values without one are `eq`. */
export function takePrefix(value: string): { prefix: Prefix; rest: string } {
  const head = value.slice(0, 2) as Prefix;
  if (PREFIXES.includes(head) && value.length > 2 && !/^[a-z]/.test(value.slice(2, 3))) {
    return { prefix: head, rest: value.slice(2) };
  }
  return { prefix: 'eq', rest: value };
}

export function parseDateValue(name: string, raw: string): { prefix: Prefix; range: DateRange } {
  const { prefix, rest } = takePrefix(raw);
  // A time without seconds or zone is accepted by FHIR search; the stored ranges are UTC.
  const range = dateRange(rest);
  if (!range) {
    throw errors.invalid(
      `Invalid date "${raw}" for search parameter ${name}: use [prefix]YYYY, YYYY-MM, YYYY-MM-DD or a dateTime`,
      name,
    );
  }
  return { prefix, range };
}

const DECIMAL = /^-?(?:\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

export interface NumberValue {
  prefix: Prefix;
  value: number;
  /** Half the unit of the last significant digit: `100` stands for [99.5, 100.5). */
  halfUnit: number;
}

export function parseNumberValue(name: string, raw: string): NumberValue {
  const { prefix, rest } = takePrefix(raw);
  const match = DECIMAL.exec(rest);
  const value = Number(rest);
  if (!match || !Number.isFinite(value)) {
    throw errors.invalid(`Invalid number "${raw}" for search parameter ${name}: use [prefix]decimal, e.g. gt5.4`, name);
  }
  const decimals = match[1]?.length ?? 0;
  const exponent = match[2] ? Number(match[2]) : 0;
  return { prefix, value, halfUnit: 0.5 * 10 ** (exponent - decimals) };
}
