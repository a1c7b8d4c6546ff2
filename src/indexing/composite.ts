import { getSearchParameters, getSearchParametersFor, type SearchParameter } from '../fhir/definitions.js';
import type { Resource } from '../fhir/types.js';
import { emptyIndexRows, MAX_COMPONENTS, type ComponentColumn, type CompositeRow } from './row-types.js';
import { compileNodePath, rootNode, type Node } from './fast-path.js';
import { splitUnion, termAppliesTo } from './plan.js';
import { addRows } from './add-rows.js';
import type { TypedValue } from './typed-value.js';

/**
 * Composite search parameters (http://hl7.org/fhir/R4/search.html#composite): a match needs all
 * components' values from the same element, so each element the parameter's expression selects
 * (the Observation itself, one Observation.component, one useContext) gives rows holding one value
 * of every component (row-types.ts, CompositeRow). The per-kind index tables cannot answer this:
 * their rows do not say which element a value came from.
 *
 * Element and component expressions are compiled with the fast path (every R4 composite fits
 * it); a composite whose definition or expressions do not compile is not indexed, and searching
 * it is refused as not supported. A quantity component also takes Range values (rows.ts, pushRange),
 * which the search compares as ranges (conditions.ts, numberComparison).
 */

export interface CompositeComponent {
  /** Code of the component's own search parameter (`code`, `value-quantity`). */
  code: string;
  type: SearchParameter['type'];
  /** The component's values in one element (`root` serves `%resource` paths). */
  evaluate(element: Node, root: Node): TypedValue[];
}

export interface CompositePlan {
  code: string;
  components: CompositeComponent[];
  elements(root: Node): Node[];
  /** Its element expressions (`Observation`, `Observation.component`), and its components' kinds and expressions: what its rows depend on. */
  terms: readonly string[];
  shape: string;
}

/** Kinds a component can have: those the row layout of CompositeRow holds. */
export const COMPONENT_KINDS: ReadonlySet<SearchParameter['type']> = new Set<SearchParameter['type']>([
  'token',
  'quantity',
  'number',
  'date',
  'string',
  'reference',
  'uri',
]);

/**
 * Rows one element may give at most (the product of its components' values: an Observation.code
 * with three codings and one value gives three). Beyond it, the element's remaining combinations are
 * not indexed.
 */
export const MAX_ROWS_PER_ELEMENT = 100;

/**
 * Corrections to R4's published definitions: DocumentReference `relationship` gives `code` as the
 * expression of its `relatesto` (reference) component and `target` as that of `relation` (token),
 * the wrong way round.
 */
const EXPRESSION_FIXES: Record<string, Record<string, string>> = {
  'http://hl7.org/fhir/SearchParameter/DocumentReference-relationship': {
    'http://hl7.org/fhir/SearchParameter/DocumentReference-relatesto': 'target',
    'http://hl7.org/fhir/SearchParameter/DocumentReference-relation': 'code',
  },
};

let byUrl: Map<string, SearchParameter> | undefined;

function definitionOf(url: string): SearchParameter | undefined {
  byUrl ??= new Map(getSearchParameters().map((param) => [param.url, param]));
  return byUrl.get(url);
}

/**
 * FHIRPath's `as(DateTime)` names the System type; the fast path knows FHIR types (`dateTime`).
 * `code-value-date` uses it.
 */
function fhirTypeNames(expression: string): string {
  return expression.replace(/\bas\(\s*DateTime\s*\)/g, 'as(dateTime)').replace(/\bas\(\s*String\s*\)/g, 'as(string)');
}

/** The plan of composite `param` on `resourceType`, or undefined when it cannot be indexed. */
export function compileComposite(param: SearchParameter, resourceType: string): CompositePlan | undefined {
  const components = param.component ?? [];
  if (param.type !== 'composite' || !param.expression || components.length < 2 || components.length > MAX_COMPONENTS) {
    return undefined;
  }
  const terms = splitUnion(param.expression).filter((term) => termAppliesTo(term, resourceType));
  if (terms.length === 0) return undefined;
  const elements = compileNodePath(terms.join(' | '), resourceType);
  if (!elements) return undefined;
  const compiled: CompositeComponent[] = [];
  const shape: string[] = [];
  for (const component of components) {
    const definition = definitionOf(component.definition);
    if (!definition || !COMPONENT_KINDS.has(definition.type)) return undefined;
    const expression = fhirTypeNames(EXPRESSION_FIXES[param.url]?.[component.definition] ?? component.expression);
    let evaluate: CompositeComponent['evaluate'];
    if (expression.startsWith('%resource.')) {
      // A value of the whole resource joined to every element (MolecularSequence's chromosome).
      const path = compileNodePath(`${resourceType}.${expression.slice('%resource.'.length)}`, resourceType);
      if (!path) return undefined;
      evaluate = (_element, root) => path.run([root]);
    } else {
      const path = compileNodePath(expression, resourceType, elements.slots);
      if (!path) return undefined;
      evaluate = (element) => path.run([element]);
    }
    compiled.push({ code: definition.code, type: definition.type, evaluate });
    shape.push(`${definition.type} ${expression}`);
  }
  return { code: param.code, components: compiled, elements: (root) => elements.run([root]), terms, shape: shape.join('$') };
}

/** A type's composite plans: every one a search may use, those a write evaluates, and the codes each search reads. */
interface TypeComposites {
  all: readonly CompositePlan[];
  stored: readonly CompositePlan[];
  codes: ReadonlyMap<string, readonly string[]>;
}

const plans = new Map<string, TypeComposites>();

function compositesOf(resourceType: string): TypeComposites {
  let found = plans.get(resourceType);
  if (!found) {
    const all = getSearchParametersFor(resourceType).flatMap((param) => (param.type === 'composite' ? (compileComposite(param, resourceType) ?? []) : []));
    const codes = unionCodes(all);
    found = { all, stored: all.filter((plan) => !codes.has(plan.code)), codes };
    plans.set(resourceType, found);
  }
  return found;
}

/**
 * Composites whose rows other composites hold whole, with those composites' codes (own code
 * first): each of its element expressions is the only one of another composite with the same
 * components (`combo-code-value-quantity`, `Observation | Observation.component`, is
 * `code-value-quantity` on the Observation and `component-code-value-quantity` on each
 * component), so it stores no rows and its searches read theirs, as union-rows.ts does for the
 * other kinds.
 */
function unionCodes(all: readonly CompositePlan[]): Map<string, string[]> {
  const unions = new Map<string, string[]>();
  for (const plan of all) {
    if (plan.terms.length < 2) continue;
    const parts = plan.terms.map((term) => all.find((other) => other.terms.length === 1 && other.terms[0] === term && other.shape === plan.shape));
    if (parts.every((part) => part !== undefined)) unions.set(plan.code, [plan.code, ...parts.map((part) => part!.code)]);
  }
  return unions;
}

/** The composite parameters of a resource type that are indexed (compiled once, then cached). */
export function getCompositePlans(resourceType: string): readonly CompositePlan[] {
  return compositesOf(resourceType).all;
}

/** The composite plans a write of the type evaluates: those whose rows no other composites hold. */
export function storedCompositePlans(resourceType: string): readonly CompositePlan[] {
  return compositesOf(resourceType).stored;
}

/** The codes whose rows a search of composite `code` on the type reads: its own, and its parts' (unionCodes). */
export function compositeCodes(resourceType: string, code: string): readonly string[] {
  return compositesOf(resourceType).codes.get(code) ?? [code];
}

/** The plan of composite `code` on `resourceType`, if it is indexed. */
export function findCompositePlan(resourceType: string, code: string): CompositePlan | undefined {
  return getCompositePlans(resourceType).find((plan) => plan.code === code);
}

type ComponentField = 'system' | 'value' | 'number' | 'high' | 'start' | 'end';

/** One component's value in the columns of a composite row (without the position suffix). */
type ComponentValue = Partial<Record<ComponentField, string | null>>;

const COMPONENT_FIELDS: readonly ComponentField[] = ['system', 'value', 'number', 'high', 'start', 'end'];

/** The column names of each component position (`value` of the second component: `value2`), named once. */
const COLUMNS = Array.from(
  { length: MAX_COMPONENTS },
  (_, index) => Object.fromEntries(COMPONENT_FIELDS.map((field) => [field, `${field}${index + 1}`])) as Record<ComponentField, ComponentColumn>,
);

/** Every component column, null, in position order: the rest of a new row (the dedup key reads this order). */
const NO_COMPONENTS = Object.fromEntries(COLUMNS.flatMap((names) => Object.values(names).map((name) => [name, null]))) as Record<ComponentColumn, null>;

/** Scratch rows for componentValues (indexing is synchronous: one user at a time). */
const scratch = emptyIndexRows();

/** A component's values in one element, as the per-kind indexer would store them. */
function componentValues(component: CompositeComponent, element: Node, root: Node): ComponentValue[] {
  const items = component.evaluate(element, root);
  if (items.length === 0) return [];
  const rows = scratch;
  for (const list of Object.values(rows)) list.length = 0;
  for (const item of items) addRows(rows, component.code, component.type, item);
  switch (component.type) {
    case 'token':
      // Text-only rows (a CodeableConcept's text) have no code to match a composite value against.
      return rows.token.filter((row) => row.value !== null).map((row) => ({ system: row.system, value: row.value }));
    case 'quantity':
      // A Range gives its low in `number` and its high in `high`, as in quantity_index (rows.ts, pushRange).
      return rows.quantity.map((row) => ({ system: row.system, value: row.unit, number: row.value, high: row.high ?? null }));
    case 'number':
      // R4's number components are integers; a Range would keep its high in `high`, as for quantities.
      return rows.number.map((row) => ({ number: row.value, high: row.high ?? null }));
    case 'date':
      return rows.date.map((row) => ({ start: row.start, end: row.end }));
    case 'string':
      return rows.string.map((row) => ({ value: row.value }));
    case 'reference':
      return rows.reference.map((row) =>
        row.url === null ? { system: row.targetType, value: row.targetId } : { system: null, value: row.url },
      );
    case 'uri':
      return rows.uri.map((row) => ({ value: row.value }));
    default:
      return [];
  }
}

function emptyRow(code: string): CompositeRow {
  return { code, ...NO_COMPONENTS };
}

/** The composite rows of a resource, deduplicated. */
export function collectComposites(resource: Resource, compositePlans: readonly CompositePlan[]): CompositeRow[] {
  if (compositePlans.length === 0) return [];
  const root = rootNode(resource, resource.resourceType);
  const rows: CompositeRow[] = [];
  const seen = new Set<string>();
  for (const plan of compositePlans) {
    for (const element of plan.elements(root)) {
      // Last component first: an element without the value (`value-quantity` of an Observation
      // that has a coded value) is known before its `code` is evaluated for nothing.
      const values: ComponentValue[][] = new Array(plan.components.length);
      let complete = true;
      for (let index = plan.components.length - 1; complete && index >= 0; index--) {
        values[index] = componentValues(plan.components[index], element, root);
        complete = values[index].length > 0;
      }
      if (!complete) continue;
      let combinations: ComponentValue[][] = [[]];
      for (const list of values) {
        combinations = combinations.flatMap((prefix) => list.map((value) => [...prefix, value])).slice(0, MAX_ROWS_PER_ELEMENT);
      }
      for (const combination of combinations) {
        const row = emptyRow(plan.code);
        combination.forEach((value, index) => {
          const names = COLUMNS[index];
          for (const [field, text] of Object.entries(value) as [ComponentField, string | null | undefined][]) row[names[field]] = text ?? null;
        });
        const key = Object.values(row).join('\u0001');
        if (seen.has(key)) continue;
        seen.add(key);
        rows.push(row);
      }
    }
  }
  return rows;
}
