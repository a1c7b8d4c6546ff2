import { COMPARTMENT_PARAMETER_CODE } from '../fhir/compartments.js';
import { getSearchParametersFor, isResourceType, type SearchParameter } from '../fhir/definitions.js';
import { compileExistsNotFalse } from './exists-not-false.js';
import { compileFastPath, type Evaluator } from './fast-path.js';
import { compileFhirPath } from './fhirpath-eval.js';
import { isIndexedType } from './add-rows.js';
import { findUnionParameters, type UnionParameter } from './union-rows.js';

/**
 * Per resource type, the search parameters to index and how to evaluate each, compiled once.
 *
 * R4 shares one expression between many resource types (`AllergyIntolerance.patient |
 * CarePlan.subject.where(resolve() is Patient) | ...`), so each expression is split at its
 * top-level `|` and only the terms that start at this resource type (or at Resource /
 * DomainResource, or at no type at all) are kept. Each term then gets the fast path when it can
 * and fhirpath.js otherwise.
 */

export interface ParamPlan {
  code: string;
  type: SearchParameter['type'];
  terms: CompiledTerm[];
}

export interface CompiledTerm {
  expression: string;
  engine: 'fast' | 'fhirpath';
  evaluate: Evaluator;
  /** Parts of its HumanName or Address values, or ContactPoint systems, whose rows other parameters store (union-rows.ts). */
  omitParts?: ReadonlySet<string>;
}

/** Parameters the resource table answers itself, and `_compartment`, computed in code (compartment-rows.ts). */
const NOT_INDEXED = new Set(['_id', '_lastUpdated', COMPARTMENT_PARAMETER_CODE]);

/** Per resource type: what it evaluates, what it stores, and under which codes (built on first use). */
interface TypePlans {
  /** Every indexed parameter's full terms (those with another's rows left out: sameRowsAs). */
  evaluated: readonly ParamPlan[];
  /** What a write stores: union parameters with only their own terms (union-rows.ts). */
  stored: readonly ParamPlan[];
  /** The string parameters stored under another's code (sameRowsAs). */
  sameAs: ReadonlyMap<string, string>;
  unions: ReadonlyMap<string, UnionParameter<CompiledTerm>>;
}

const typePlans = new Map<string, TypePlans>();

/** Splits at `|` outside parentheses and string literals. */
export function splitUnion(expression: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < expression.length; i++) {
    const char = expression[i];
    if (quote) {
      if (char === '\\') i++;
      else if (char === quote) quote = undefined;
    } else if (char === "'" || char === '`') quote = char;
    else if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === '|' && depth === 0) {
      terms.push(expression.slice(start, i).trim());
      start = i + 1;
    }
  }
  terms.push(expression.slice(start).trim());
  return terms.filter((term) => term !== '');
}

/** Whether a union term can give values for this resource type, judged by the type it starts at. */
export function termAppliesTo(term: string, resourceType: string): boolean {
  const root = /^[\s(]*([A-Za-z_][A-Za-z0-9_]*)/.exec(term)?.[1];
  if (!root || root === resourceType || root === 'Resource' || root === 'DomainResource') return true;
  return !isResourceType(root);
}

/** Engine choice: `auto` is the fast path where it applies; `fhirpath` (benchmarks, tests) never uses it. */
export type EngineChoice = 'auto' | 'fhirpath';

export function compileTerm(
  expression: string,
  resourceType: string,
  engine: EngineChoice = 'auto',
): CompiledTerm | undefined {
  const fast = engine === 'auto' ? (compileFastPath(expression, resourceType) ?? compileExistsNotFalse(expression, resourceType)) : undefined;
  if (fast) return { expression, engine: 'fast', evaluate: fast };
  const slow = compileFhirPath(expression);
  return slow && { expression, engine: 'fhirpath', evaluate: slow };
}

/**
 * Not indexed here: `composite` (a match needs its components' values from the same element, e.g.
 * one Observation.component, as a tuple, which the per-kind tables cannot hold: composite.ts gives
 * them rows of their own), `special`
 * (`near` and `_text`/`_content` need their own machinery), parameters without an expression, and
 * `_id`/`_lastUpdated`.
 */
function isIndexed(param: SearchParameter): boolean {
  return !NOT_INDEXED.has(param.code) && param.expression !== undefined && isIndexedType(param.type);
}

/** The plan for a resource type, uncached: use getIndexPlan. */
export function buildPlan(resourceType: string, engine: EngineChoice = 'auto'): ParamPlan[] {
  return [...plansOf(resourceType, engine).stored];
}

function plansOf(resourceType: string, engine: EngineChoice): TypePlans {
  const compiled = getSearchParametersFor(resourceType).flatMap((param) => compileParamPlan(param, resourceType, engine) ?? []);
  const sameAs = sameRowsAs(compiled);
  const evaluated = compiled.filter((param) => !sameAs.has(param.code));
  const unions = findUnionParameters(evaluated);
  const stored = evaluated.flatMap((param) => {
    const union = unions.get(param.code);
    if (!union) return [param];
    return union.ownTerms.length > 0 ? [{ ...param, terms: [...union.ownTerms] }] : [];
  });
  return { evaluated, stored, sameAs, unions };
}

function cachedPlans(resourceType: string): TypePlans {
  let found = typePlans.get(resourceType);
  if (!found) {
    found = plansOf(resourceType, 'auto');
    typePlans.set(resourceType, found);
  }
  return found;
}

/**
 * String parameters whose expression on a type is another string parameter's (R4's `phonetic`
 * and `name` on Patient, Person, Practitioner and RelatedPerson are both `X.name`, as this server
 * matches no sound), by code, with the code whose rows they read: the same rows would be stored
 * twice, so only the code first in alphabetical order is indexed and searches of the others
 * read its rows (storedCode). Alphabetical, not definition order, so that every type stores
 * `name` (a search of several types has one code). Other kinds keep their rows: includes and
 * compartments read reference rows by their own code.
 */
function sameRowsAs(plan: readonly ParamPlan[]): Map<string, string> {
  const first = new Map<string, string>();
  const keyOf = (param: ParamPlan) => param.terms.map((term) => term.expression).sort().join(' | ');
  for (const param of plan) {
    if (param.type !== 'string') continue;
    const key = keyOf(param);
    const earlier = first.get(key);
    if (earlier === undefined || param.code < earlier) first.set(key, param.code);
  }
  const same = new Map<string, string>();
  for (const param of plan) {
    const stored = param.type === 'string' ? first.get(keyOf(param)) : undefined;
    if (stored !== undefined && stored !== param.code) same.set(param.code, stored);
  }
  return same;
}

/** The code under which the rows of built-in parameter `code` of `resourceType` are stored: its own, or that of the parameter with the same rows. */
export function storedCode(resourceType: string, code: string): string {
  if (!isResourceType(resourceType)) return code;
  return cachedPlans(resourceType).sameAs.get(code) ?? code;
}

/**
 * The codes whose rows hold the values of built-in parameter `code` of `resourceType`: its stored
 * code and, for a union parameter, the codes of the parameters that hold its other values
 * (union-rows.ts). A search reads rows of any of them.
 */
export function storedCodes(resourceType: string, code: string): readonly string[] {
  if (!isResourceType(resourceType)) return [code];
  const plans = cachedPlans(resourceType);
  const stored = plans.sameAs.get(code) ?? code;
  return plans.unions.get(stored)?.codes ?? [stored];
}

/**
 * One parameter's plan on a resource type, or undefined when it is not indexed or none of its
 * terms applies to the type or compiles. Built-in plans are cached by getIndexPlan; a project's
 * own SearchParameters (src/indexing/parameters.ts) are compiled with it too, and cached there.
 */
export function compileParamPlan(param: SearchParameter, resourceType: string, engine: EngineChoice = 'auto'): ParamPlan | undefined {
  if (!isIndexed(param)) return undefined;
  const terms = splitUnion(param.expression ?? '')
    .filter((term) => termAppliesTo(term, resourceType))
    .flatMap((term) => compileTerm(term, resourceType, engine) ?? []);
  return terms.length > 0 ? { code: param.code, type: param.type, terms } : undefined;
}

/** The compiled parameters for a resource type as a write stores them (built on first use, then cached). */
export function getIndexPlan(resourceType: string): readonly ParamPlan[] {
  return cachedPlans(resourceType).stored;
}

/** Every parameter of a type with all its terms, union parameters whole: to test a resource against a parameter's values in memory. */
export function getEvaluationPlan(resourceType: string): readonly ParamPlan[] {
  return cachedPlans(resourceType).evaluated;
}
