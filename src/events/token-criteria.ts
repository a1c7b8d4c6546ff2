import type { Resource } from '../fhir/types.js';
import { collectRows } from '../indexing/collect.js';
import { getEvaluationPlan, type ParamPlan } from '../indexing/plan.js';
import type { ProjectParameters } from '../indexing/parameters.js';
import { capUtf8, MAX_INDEXED_SYSTEM_BYTES, MAX_INDEXED_VALUE_BYTES } from '../indexing/text.js';
import { splitOr, splitPipe, unescape } from '../search/query/values.js';

/** One token value of a criteria, as the search compares it with a token index row. */
interface TokenValue {
  /** undefined: any system; null: no system (`|code`). */
  readonly system: string | null | undefined;
  /** undefined: any code (`system|`). */
  readonly code: string | undefined;
}

interface TokenTerm {
  readonly plan: ParamPlan;
  /** Any of them (the comma of a search value). */
  readonly values: readonly TokenValue[];
}

/** Whether a resource meets every parameter of a criteria (each a list of alternatives). */
export type InMemoryCriteria = (resource: Resource) => boolean;

/**
 * Criteria whose parameters are all built-in token parameters without a modifier
 * (`Observation?code=http://loinc.org|8867-4,8310-5&status=final`) tested on the resource itself,
 * with the index rows a write would store for those parameters and the comparison the search
 * makes (src/search/query/conditions/token.ts): the same answer as a search of the stored index
 * for a current version, without a statement. Undefined for any other criteria (chains,
 * modifiers, other kinds, a parameter the project defines itself): those are searched.
 */
export function inMemoryCriteria(resourceType: string, params: readonly [string, string][], own: ProjectParameters): InMemoryCriteria | undefined {
  if (params.length === 0) return undefined;
  const plans = getEvaluationPlan(resourceType);
  const terms: TokenTerm[] = [];
  for (const [name, value] of params) {
    const plan = plans.find((candidate) => candidate.code === name);
    if (!plan || plan.type !== 'token' || own.find(resourceType, name)) return undefined;
    const values = splitOr(value).map(tokenValue);
    if (values.length === 0 || values.some((item) => item === undefined)) return undefined;
    terms.push({ plan, values: values as TokenValue[] });
  }
  return (resource) => terms.every((term) => termMet(resource, term));
}

function tokenValue(raw: string): TokenValue | undefined {
  const parts = splitPipe(raw);
  const code = (text: string) => capUtf8(unescape(text), MAX_INDEXED_VALUE_BYTES);
  const system = (text: string) => capUtf8(unescape(text), MAX_INDEXED_SYSTEM_BYTES);
  if (parts.length === 1) return parts[0] === '' ? undefined : { system: undefined, code: code(parts[0]) };
  if (parts.length !== 2) return undefined;
  const [sys, value] = parts;
  if (sys === '' && value === '') return undefined;
  if (sys === '') return { system: null, code: code(value) };
  return { system: system(sys), code: value === '' ? undefined : code(value) };
}

function termMet(resource: Resource, term: TokenTerm): boolean {
  const rows = collectRows(resource, [term.plan]).token;
  return rows.some((row) => term.values.some((value) =>
    (value.code === undefined || row.value === value.code) && (value.system === undefined || row.system === value.system)));
}
