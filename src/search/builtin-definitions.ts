import { getSearchParameters, getStructureDefinitions } from '../fhir/definitions.js';
import type { Resource } from '../fhir/types.js';
import { normalise } from '../indexing/text.js';
import { shippedDefinitions } from '../validation/profiles/library.js';
import { CONTROL } from './plan/control.js';
import { parseFilter, type FilterExpression } from './query/filter-parser.js';
import { splitOr, unescape } from './query/values.js';

/**
 * The definitions the server ships (core R4 and Medplum's admin types, the HL7 profiles and
 * extension definitions; the R4 SearchParameters), found by searches of StructureDefinition and
 * SearchParameter beside the project's own, read-only, as Medplum's server lists them: its client
 * loads a type's schema with `StructureDefinitionList(_filter: "name eq Patient")` and
 * `SearchParameterList(base: "Patient")`. They are not stored (every project would hold 5,000
 * copies, or share a project the isolation rules know nothing of), so they are matched here, in
 * memory, on a few parameters: a search using any other parameter (or `_sort`, `_cursor`) finds
 * the project's own definitions only.
 */

type Kind = 'string' | 'token' | 'uri';

interface BuiltinParameter {
  kind: Kind;
  values: (resource: Record<string, unknown>) => readonly unknown[];
}

const field = (name: string) => (resource: Record<string, unknown>) => [resource[name]].flat();

const COMMON: Record<string, BuiltinParameter> = {
  _id: { kind: 'token', values: field('id') },
  url: { kind: 'uri', values: field('url') },
  name: { kind: 'string', values: field('name') },
};

const PARAMETERS: Record<string, Record<string, BuiltinParameter>> = {
  StructureDefinition: {
    ...COMMON,
    type: { kind: 'token', values: field('type') },
    kind: { kind: 'token', values: field('kind') },
    derivation: { kind: 'token', values: field('derivation') },
  },
  SearchParameter: {
    ...COMMON,
    base: { kind: 'token', values: field('base') },
    code: { kind: 'token', values: field('code') },
    type: { kind: 'token', values: field('type') },
  },
};

const rowsByType = new Map<string, Resource[]>();

function builtinRows(type: string): Resource[] {
  let rows = rowsByType.get(type);
  if (!rows) {
    const resources: Resource[] =
      type === 'StructureDefinition' ? [...getStructureDefinitions().values(), ...shippedDefinitions()] : [...getSearchParameters()];
    // Ids are unique within each file, not across them (a profile may reuse a type's id).
    const seen = new Set<string>();
    rows = resources.filter((r) => r.id !== undefined && !seen.has(r.id) && seen.add(r.id));
    rowsByType.set(type, rows);
  }
  return rows;
}

/** A test of one resource. */
type Test = (resource: Record<string, unknown>) => boolean;

/**
 * The built-in definitions of `types` matching `params`, in a fixed order; undefined when the
 * search is not one built-ins take part in (another type, or a parameter matched only in SQL).
 */
export function builtinMatches(
  types: string | readonly string[] | undefined,
  params: readonly [string, string][],
): { type: string; rows: Resource[] } | undefined {
  if (typeof types !== 'string' && types?.length !== 1) return undefined;
  const type = typeof types === 'string' ? types : types[0];
  const known = PARAMETERS[type];
  if (!known) return undefined;
  const tests: Test[] = [];
  for (const [name, value] of params) {
    if (name === '_sort' || name === '_cursor') return undefined;
    if (CONTROL.has(name)) continue;
    const test = name === '_filter' ? filterTest(known, value) : parameterTest(known, name, value);
    if (!test) return undefined;
    tests.push(test);
  }
  return { type, rows: builtinRows(type).filter((resource) => tests.every((test) => test(resource as Record<string, unknown>))) };
}

/** `code[:modifier]=a,b` (OR) on a parameter matched here; undefined for any other. */
function parameterTest(known: Record<string, BuiltinParameter>, name: string, value: string): Test | undefined {
  const [code, modifier, extra] = name.split(':');
  const param = Object.hasOwn(known, code) ? known[code] : undefined;
  if (!param || extra !== undefined) return undefined;
  const alternatives = splitOr(value).map(unescape);
  if (param.kind !== 'string' && (modifier !== undefined || alternatives.some((v) => v.includes('|')))) return undefined;
  if (param.kind === 'string' && modifier !== undefined && modifier !== 'exact' && modifier !== 'contains') return undefined;
  const match = (v: string, wanted: string) => compare(param.kind, modifier, v, wanted);
  return (resource) => param.values(resource).some((v) => typeof v === 'string' && alternatives.some((wanted) => match(v, wanted)));
}

function compare(kind: Kind, modifier: string | undefined, value: string, wanted: string): boolean {
  if (kind !== 'string' || modifier === 'exact') return value === wanted;
  const [have, want] = [normalise(value), normalise(wanted)];
  if (modifier === 'contains') return have.includes(want);
  if (modifier === 'ends-with') return have.endsWith(want);
  return have.startsWith(want);
}

/** `_filter` over parameters matched here (eq, ne; co, sw, ew on strings); undefined when it uses others. */
function filterTest(known: Record<string, BuiltinParameter>, text: string): Test | undefined {
  let expression: FilterExpression;
  try {
    expression = parseFilter(text);
  } catch {
    // The search of the stored definitions reports the error.
    return undefined;
  }
  const build = (e: FilterExpression): Test | undefined => {
    if (e.kind === 'not') {
      const child = build(e.child);
      return child && ((r) => !child(r));
    }
    if (e.kind !== 'compare') {
      const children = e.children.map(build);
      if (children.some((c) => c === undefined)) return undefined;
      const tests = children as Test[];
      return e.kind === 'and' ? (r) => tests.every((t) => t(r)) : (r) => tests.some((t) => t(r));
    }
    const param = Object.hasOwn(known, e.path) ? known[e.path] : undefined;
    const modifier = { eq: 'exact', ne: 'exact', co: 'contains', sw: undefined, ew: 'ends-with' }[e.operator as string];
    if (!param || !(e.operator in { eq: 1, ne: 1, co: 1, sw: 1, ew: 1 }) || (param.kind !== 'string' && e.operator !== 'eq' && e.operator !== 'ne')) {
      return undefined;
    }
    const matches: Test = (r) => param.values(r).some((v) => typeof v === 'string' && compare(param.kind, modifier, v, e.value));
    return e.operator === 'ne' ? (r) => !matches(r) : matches;
  };
  return build(expression);
}
