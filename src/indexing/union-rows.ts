/**
 * Parameters whose values are the union of other parameters' values, and which therefore store
 * only the rows no other parameter stores. R4 defines many: Observation's `combo-code` is
 * `Observation.code | Observation.component.code`, exactly the terms of `code` and
 * `component-code`; Patient's `name` is `Patient.name`, whose family and given parts are the
 * values of `family` (`Patient.name.family`) and `given`. Such a parameter (a union parameter)
 * keeps its own code for the values no other parameter holds (a name's text, prefix and suffix),
 * and a search, sort or window of it reads the rows of its own code and of its parts' codes
 * (unionCodes). Rows stored before this (a `name` row for every part) then answer the same: a
 * value found under two codes is still one match, and its least or greatest value is the same.
 * Found from the definitions, not listed: a parameter covers another when each of its terms is
 * one of the other's terms, a part of a HumanName or Address one of them gives, or the
 * ContactPoints of one system among those it gives (Patient's `phone` is
 * `Patient.telecom.where(system='phone')`, so `telecom` stores rows only for the other systems).
 */

/** The kinds whose parameters may read other parameters' rows (reference rows are read by code by includes and compartments). */
const UNION_KINDS = new Set(['string', 'token', 'quantity']);

/** What this file needs of a compiled term and parameter (plan.ts's CompiledTerm and ParamPlan). */
interface Term {
  expression: string;
  omitParts?: ReadonlySet<string>;
}
interface Parameter<T extends Term> {
  code: string;
  type: string;
  terms: readonly T[];
}

/** The parts of a HumanName or Address value the indexer stores string rows for, in that order (add-rows.ts). */
export const NAME_PARTS = ['text', 'family', 'given', 'prefix', 'suffix'] as const;
export const ADDRESS_PARTS = ['text', 'line', 'city', 'district', 'state', 'postalCode', 'country'] as const;
const PARTS = new Set<string>([...NAME_PARTS, ...ADDRESS_PARTS]);
/** A term's ContactPoints of one system (`Patient.telecom.where(system='phone')`): the term and the system, its part. */
const CONTACT_POINTS_OF_SYSTEM = /^(.+)\.where\(system\s*=\s*'([a-z]+)'\)$/;

export interface UnionParameter<T extends Term> {
  /** Its own code first, then the codes of the parameters that hold the rest of its values. */
  codes: readonly string[];
  /** Its terms that still store rows of their own, with the parts other parameters hold left out. */
  ownTerms: readonly T[];
}

/** The union parameters of one type's plan (sameRowsAs already applied), by code. */
export function findUnionParameters<T extends Term>(plan: readonly Parameter<T>[]): Map<string, UnionParameter<T>> {
  const covering = new Map<string, Parameter<T>[]>();
  for (const param of plan) {
    if (!UNION_KINDS.has(param.type)) continue;
    const within = plan.filter((other) => other !== param && other.type === param.type && covers(other, param));
    if (within.length > 0) covering.set(param.code, within);
  }
  const unions = new Map<string, UnionParameter<T>>();
  for (const [code, within] of covering) {
    const param = plan.find((p) => p.code === code)!;
    unions.set(code, { codes: codesOf(code, covering), ownTerms: ownTerms(param, within) });
  }
  return unions;
}

/** Whether every term of `part` is a term of `whole`, or a HumanName/Address part of one, and `part` is not `whole` again. */
function covers(part: Parameter<Term>, whole: Parameter<Term>): boolean {
  const terms = new Set(whole.terms.map((term) => term.expression));
  const inside = part.terms.every((term) => terms.has(term.expression) || partOf(term.expression, terms) !== undefined);
  return inside && !(part.terms.length === whole.terms.length && part.terms.every((term) => terms.has(term.expression)));
}

/**
 * The term of `terms` and part name that `expression` is (`Patient.name.family`: `Patient.name`,
 * `family`; `Patient.telecom.where(system='phone')`: `Patient.telecom`, `phone`), if it is one.
 */
function partOf(expression: string, terms: ReadonlySet<string>): { term: string; part: string } | undefined {
  const ofSystem = CONTACT_POINTS_OF_SYSTEM.exec(expression);
  if (ofSystem) return terms.has(ofSystem[1]) ? { term: ofSystem[1], part: ofSystem[2] } : undefined;
  const dot = expression.lastIndexOf('.');
  if (dot < 0) return undefined;
  const term = expression.slice(0, dot);
  const part = expression.slice(dot + 1);
  return PARTS.has(part) && terms.has(term) ? { term, part } : undefined;
}

/** `code` and, recursively, the codes of the parameters covering it (strict subsets, so no cycle). */
function codesOf(code: string, covering: ReadonlyMap<string, readonly Parameter<Term>[]>): string[] {
  const codes = [code];
  for (const part of covering.get(code) ?? []) {
    for (const inner of codesOf(part.code, covering)) if (!codes.includes(inner)) codes.push(inner);
  }
  return codes;
}

/** The terms of `param` that no covering parameter holds whole, each without the parts they hold. */
function ownTerms<T extends Term>(param: Parameter<T>, within: readonly Parameter<T>[]): T[] {
  const terms = new Set(param.terms.map((term) => term.expression));
  const whole = new Set<string>();
  const parts = new Map<string, Set<string>>();
  for (const other of within) {
    for (const { expression } of other.terms) {
      const found = terms.has(expression) ? undefined : partOf(expression, terms);
      if (!found) whole.add(expression);
      else parts.set(found.term, (parts.get(found.term) ?? new Set()).add(found.part));
    }
  }
  return param.terms
    .filter((term) => !whole.has(term.expression))
    .map((term) => (parts.has(term.expression) ? { ...term, omitParts: parts.get(term.expression) } : term));
}
