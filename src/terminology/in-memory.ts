import type { LoadedSystem } from './types.js';
import type { ConceptDetail } from './types.js';
import type { ComposeElement, ComposeFilter } from './types.js';

/**
 * The membership predicate of one compose element over a code system held in memory: the same
 * rules as the SQL predicate of membership.ts (filterSql, valueTest), evaluated on the loaded
 * concepts. Undefined when the element uses a filter only SQL evaluates (regex: PostgreSQL's
 * regular expressions are not JavaScript's), so that both $expand and $validate-code take SQL.
 */
export type ConceptTest = (concept: ConceptDetail) => boolean;

const HIERARCHY_PROPERTIES = new Set(['concept', 'code']);

export function compileElement(element: ComposeElement, system: LoadedSystem, unsupported: (filter: ComposeFilter) => never): ConceptTest | undefined {
  const tests: ConceptTest[] = [];
  if (element.concept?.length) {
    const listed = new Set(element.concept.map((c) => c.code));
    tests.push((c) => listed.has(c.code));
  }
  for (const filter of element.filter ?? []) {
    const test = compileFilter(filter, system, unsupported);
    if (!test) return undefined;
    tests.push(test);
  }
  if (tests.length === 0) return () => true;
  if (tests.length === 1) return tests[0];
  return (c) => tests.every((test) => test(c));
}

function compileFilter(filter: ComposeFilter, system: LoadedSystem, unsupported: (filter: ComposeFilter) => never): ConceptTest | undefined {
  const { property, op, value } = filter;
  const onCode = HIERARCHY_PROPERTIES.has(property);
  switch (op) {
    case 'is-a': {
      const below = belowOrSelf(system, value);
      return (c) => below.has(c.code);
    }
    case 'descendent-of': {
      const below = belowOrSelf(system, value);
      return (c) => c.code !== value && below.has(c.code);
    }
    case 'is-not-a': {
      const below = belowOrSelf(system, value);
      return (c) => !below.has(c.code);
    }
    case 'generalizes': {
      // terminology_closure has rows only for descendants that are concepts of the system.
      const ancestors = system.byCode.has(value) ? ancestorsOrSelf(system, value) : new Set([value]);
      return (c) => ancestors.has(c.code);
    }
    case '=':
      return valueTest(property, onCode, (v) => v === value);
    case 'in': {
      const list = new Set(splitList(value));
      return valueTest(property, onCode, (v) => list.has(v));
    }
    case 'not-in': {
      const list = new Set(splitList(value));
      const test = valueTest(property, onCode, (v) => list.has(v));
      return (c) => !test(c);
    }
    case 'exists': {
      const test = valueTest(property, onCode, () => true);
      return (c) => (value === 'true') === test(c);
    }
    case 'regex':
      return undefined;
    default:
      return unsupported(filter);
  }
}

/** PostgreSQL's string_to_array(value, ','): an empty string is an empty list. */
function splitList(value: string): string[] {
  return value === '' ? [] : value.split(',');
}

/** A test on the values of `property` of a concept: code, display, parent/child, or a stored property. */
function valueTest(property: string, onCode: boolean, test: (value: string) => boolean): ConceptTest {
  if (onCode) return (c) => test(c.code);
  if (property === 'display') return (c) => c.display !== null && test(c.display);
  if (property === 'parent') return (c) => c.parents.some(test);
  if (property === 'child') return (c) => c.children.some(test);
  return (c) =>
    c.properties.some((p) => p.property === property && (test(p.value) || (p.type === 'Coding' && codingCodeMatches(p.value, test))));
}

function codingCodeMatches(json: string, test: (value: string) => boolean): boolean {
  const code = (JSON.parse(json) as { code?: unknown }).code;
  return typeof code === 'string' && test(code);
}

/** Codes below one code kept per loaded system (sets of up to the system's size each). */
const MAX_BELOW_SETS = 64;

/**
 * `code` and every code below it (terminology_closure: a code is below another when a chain of
 * parent links leads up to it), computed once per loaded system and code.
 */
function belowOrSelf(system: LoadedSystem, code: string): ReadonlySet<string> {
  const found = system.below.get(code);
  if (found) return found;
  const below = reachable(code, system.childrenOf);
  if (system.below.size >= MAX_BELOW_SETS) system.below.clear();
  system.below.set(code, below);
  return below;
}

function ancestorsOrSelf(system: LoadedSystem, code: string): Set<string> {
  return reachable(code, system.parentsOf);
}

/** `code` and every code reached from it through `links` (children or parents), cycles tolerated. */
function reachable(code: string, links: ReadonlyMap<string, readonly string[]>): Set<string> {
  const found = new Set<string>([code]);
  const stack = [code];
  while (stack.length > 0) {
    for (const next of links.get(stack.pop()!) ?? []) {
      if (!found.has(next)) {
        found.add(next);
        stack.push(next);
      }
    }
  }
  return found;
}
