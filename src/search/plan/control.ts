import type { SearchParameter } from '../../fhir/definitions.js';
import { errors } from '../../fhir/outcome.js';
import { parseSummary, type SummaryMode } from '../../fhir/summary.js';
import type { ProjectParameters } from '../../indexing/parameters.js';
import { findParameter, isSearchable, parameterCodes } from '../query/conditions/lookup.js';
import type { Leniency } from './leniency.js';

/** The result-control parameters of a search (`_count`, `_sort`, `_total`...), which are not filters. */

export const DEFAULT_COUNT = 20;
export const MAX_COUNT = 1000;
export const MAX_OFFSET = 10_000;
export const MIN_CURSOR_COUNT = 20;

export const CONTROL = new Set([
  '_count',
  '_offset',
  '_sort',
  '_total',
  '_cursor',
  '_summary',
  '_elements',
  '_include',
  '_revinclude',
  '_include:iterate',
  '_revinclude:iterate',
  '_format',
  '_pretty',
  '_type',
]);

export type TotalMode = 'none' | 'estimate' | 'accurate';

export interface SortKey {
  code: string;
  descending: boolean;
  /** The parameter sorted by; absent for `_id` and `_lastUpdated`, columns of the resource. */
  param?: SearchParameter;
  /** The codes whose rows hold its values (parameterCodes), with `param`. */
  codes?: readonly string[];
}

export interface ResultControl {
  count: number;
  offset: number;
  total: TotalMode;
  summary: SummaryMode | undefined;
  elements: string | undefined;
  sort: SortKey[];
  /** `_sort`, `_offset` and `_cursor` as given. */
  sortText: string | undefined;
  offsetText: string | undefined;
  cursor: string | undefined;
}

/** The result-control parameters, in the order they are checked; a bad `_sort` is ignored under lenient handling. */
export function parseControl(
  params: readonly [string, string][],
  types: readonly string[],
  parameters: ProjectParameters | undefined,
  leniency: Leniency,
): ResultControl {
  const get = (name: string): string | undefined => params.find(([key]) => key === name)?.[1];
  return {
    count: parseCount(get('_count')),
    offset: parseOffset(get('_offset')),
    total: parseTotal(get('_total')),
    summary: parseSummary(get('_summary') ?? null),
    elements: get('_elements'),
    sort: leniency.tolerate(() => parseSort(get('_sort'), types, parameters)) ?? [],
    sortText: get('_sort'),
    offsetText: get('_offset'),
    cursor: get('_cursor'),
  };
}

/**
 * The control of a search of one type without filters (but `_project`) or `_sort`: sorted by
 * `_lastUpdated` ascending, so that it pages by cursor. Its pages are then index range scans at any
 * depth, where offsets read and skip every earlier row (an app reading through all its Patients);
 * the order is the server's to choose for an unsorted search (docs/search.md). Other unsorted
 * searches keep the order their filters' index rows give.
 */
export function orderedWhenUnfiltered(control: ResultControl, typeList: readonly string[] | undefined, filterNames: readonly string[]): ResultControl {
  // `_project` names the projects searched, as the caller's scope would: it filters nothing.
  const unfiltered = filterNames.every((name) => name === '_project');
  const unordered = control.sortText === undefined && unfiltered && typeList?.length === 1;
  if (!unordered || control.count < MIN_CURSOR_COUNT) return control;
  return { ...control, sort: [{ code: '_lastUpdated', descending: false }] };
}

/**
 * A count written as FHIR writes an unsigned integer, digits only; undefined otherwise. `Number()`
 * alone read `0x10` as 16, and `1e3`, ` 10` and `+5` as numbers too.
 */
export function wholeNumber(raw: string): number | undefined {
  return /^[0-9]+$/.test(raw) ? Number(raw) : undefined;
}

function parseCount(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_COUNT;
  const value = wholeNumber(raw);
  if (value === undefined) {
    throw errors.invalid(`_count must be an integer from 0 to ${MAX_COUNT}, not "${raw}"`, '_count');
  }
  return Math.min(value, MAX_COUNT);
}

/** `_offset`: 0 to MAX_OFFSET (history takes the same rule). */
export function parseOffset(raw: string | undefined): number {
  if (raw === undefined) return 0;
  const value = wholeNumber(raw);
  if (value === undefined) {
    throw errors.invalid(`_offset must be an integer from 0 to ${MAX_OFFSET}, not "${raw}"`, '_offset');
  }
  if (value > MAX_OFFSET) {
    throw errors.invalid(
      `_offset ${value} is above the maximum of ${MAX_OFFSET}: use _sort=_lastUpdated and follow the _cursor links to page further`,
      '_offset',
    );
  }
  return value;
}

function parseTotal(raw: string | undefined): TotalMode {
  if (raw === undefined) return 'none';
  if (raw === 'none' || raw === 'estimate' || raw === 'accurate') return raw;
  throw errors.invalid(`_total must be none, estimate or accurate, not "${raw}"`, '_total');
}

function parseSort(raw: string | undefined, types: readonly string[], parameters: ProjectParameters | undefined): SortKey[] {
  if (raw === undefined) return [];
  const keys = raw.split(',').map((part) => part.trim());
  if (keys.some((key) => key === '' || key === '-')) throw errors.invalid(`Invalid _sort "${raw}"`, '_sort');
  return keys.map((key) => {
    const descending = key.startsWith('-');
    const code = descending ? key.slice(1) : key;
    if (code === '_id' || code === '_lastUpdated') return { code, descending };
    let param: SearchParameter;
    try {
      param = findParameter(code, types, code, parameters);
    } catch {
      throw errors.invalid(`Cannot sort by "${code}": it is not a search parameter of ${types.join(', ')}`, '_sort');
    }
    if (!isSearchable(param)) throw errors.invalid(`Cannot sort by ${code}: ${param.type} parameters do not sort`, '_sort');
    return { code: param.code, descending, param, codes: parameterCodes(code, types, code, parameters) };
  });
}
