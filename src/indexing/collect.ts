import type { Resource } from '../fhir/types.js';
import { emptyIndexRows, type IndexRows } from './row-types.js';
import type { ParamPlan } from './plan.js';
import { addRows } from './add-rows.js';

/** Evaluates every parameter of a plan on the resource and returns the deduplicated rows. */
export function collectRows(resource: Resource, plan: readonly ParamPlan[]): IndexRows {
  const rows = emptyIndexRows();
  for (const param of plan) {
    for (const term of param.terms) {
      for (const item of term.evaluate(resource)) addRows(rows, param.code, param.type, item, term.omitParts);
    }
  }
  return dedupe(rows);
}

/** Rows are equal when every field is; a union or repeated data must not store a row twice. */
function dedupe(rows: IndexRows): IndexRows {
  rows.token = unique(rows.token, (r) => `${r.code}\0${n(r.system)}\0${n(r.value)}\0${n(r.text)}`);
  rows.string = unique(rows.string, (r) => `${r.code}\0${r.value}\0${r.exact}`);
  rows.date = unique(rows.date, (r) => `${r.code}\0${n(r.start)}\0${n(r.end)}`);
  rows.number = unique(rows.number, (r) => `${r.code}\0${r.value}\0${r.high ?? ''}`);
  rows.quantity = unique(rows.quantity, (r) => `${r.code}\0${r.value}\0${r.high ?? ''}\0${n(r.system)}\0${n(r.unit)}`);
  rows.reference = unique(rows.reference, (r) => `${r.code}\0${n(r.targetType)}\0${n(r.targetId)}\0${n(r.url)}`);
  rows.uri = unique(rows.uri, (r) => `${r.code}\0${r.value}`);
  return rows;
}

/** Null as a character no index value contains, so null and the text "null" stay distinct. */
function n(value: string | null): string {
  return value ?? '\u0001';
}

function unique<T>(list: T[], key: (row: T) => string): T[] {
  if (list.length < 2) return list;
  const seen = new Set<string>();
  return list.filter((row) => {
    const k = key(row);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
