import { getStructureDefinition, getStructureDefinitions } from '../fhir/definitions.js';

/**
 * Element types from the StructureDefinitions (R4 and the admin types), for the fast-path
 * evaluator: it resolves every step of a path when the expression is compiled, so evaluating is
 * only property reads. fhirpath.js's own R4 model is not used here because it lacks the admin types.
 */

/**
 * What the evaluator knows about a node: its FHIR type and where its children are defined (the
 * type name for data types and resources, the element path for backbone elements). Interned, so
 * compiled steps can key maps by slot identity.
 */
export interface Slot {
  readonly type: string;
  readonly key: string;
}

/** One way a child element appears in JSON: its property name (`valueQuantity`) and its slot. */
export interface Branch {
  readonly prop: string;
  readonly slot: Slot;
}

interface ElementInfo {
  codes: string[];
  choice: boolean;
  contentReference?: string;
}

let elements: Map<string, ElementInfo> | undefined;
const slots = new Map<string, Slot>();

const SYSTEM_TYPES: Record<string, string> = {
  String: 'string',
  Boolean: 'boolean',
  Integer: 'integer',
  Decimal: 'decimal',
  Date: 'date',
  DateTime: 'dateTime',
  Time: 'time',
};

/** FHIR type name for a type code; `System.String` (used for ids and extension urls) becomes `string`. */
export function fhirTypeName(code: string): string {
  const system = /(?:^|\/)System\.(\w+)$/.exec(code);
  return system ? (SYSTEM_TYPES[system[1]] ?? code) : code;
}

function elementIndex(): Map<string, ElementInfo> {
  if (!elements) {
    elements = new Map();
    for (const sd of getStructureDefinitions().values()) {
      for (const element of sd.snapshot?.element ?? []) {
        const choice = element.path.endsWith('[x]');
        const path = choice ? element.path.slice(0, -3) : element.path;
        const codes = (element.type ?? []).map((type) => fhirTypeName(type.code));
        const contentReference = element.contentReference?.replace(/^[^#]*#/, '');
        if (!elements.has(path)) elements.set(path, { codes, choice, contentReference });
      }
    }
  }
  return elements;
}

export function slotFor(type: string, key: string): Slot {
  const id = `${type}|${key}`;
  let slot = slots.get(id);
  if (!slot) {
    slot = { type, key };
    slots.set(id, slot);
  }
  return slot;
}

/** The slot of a resource of this type: the root of every search expression. */
export function resourceSlot(resourceType: string): Slot {
  return slotFor(resourceType, resourceType);
}

function childSlot(code: string, path: string): Slot {
  // Backbone elements have no type of their own: their children are listed under their path.
  if (code === 'BackboneElement' || code === 'Element') return slotFor(code, path);
  return slotFor(code, code);
}

/**
 * How child `name` of a node in `slot` can appear in JSON. A choice element gives one branch per
 * type (`value` → `valueQuantity`, `valueString`, ...). An element the definitions do not know
 * gives one untyped branch, as fhirpath.js would still read the property.
 */
export function childBranches(slot: Slot, name: string): Branch[] {
  const path = `${slot.key}.${name}`;
  const info = elementIndex().get(path);
  if (!info) return [{ prop: name, slot: slotFor('', path) }];
  if (info.contentReference) return [{ prop: name, slot: slotFor('BackboneElement', info.contentReference) }];
  if (info.choice) {
    return info.codes.map((code) => ({
      prop: name + code[0].toUpperCase() + code.slice(1),
      slot: childSlot(code, path),
    }));
  }
  return info.codes.slice(0, 1).map((code) => ({ prop: name, slot: childSlot(code, path) }));
}

/**
 * Whether a value of FHIR type `type` is also a `wanted` (Age is a Quantity). Primitive types match
 * only themselves: FHIRPath's `code.as(string)` is empty although `code` specialises `string`.
 */
export function isTypeOf(type: string, wanted: string): boolean {
  const seen = new Set<string>();
  for (let current: string | undefined = type; current && !seen.has(current); ) {
    if (current === wanted) return true;
    seen.add(current);
    const sd = getStructureDefinition(current);
    if (!sd || sd.kind === 'primitive-type') return false;
    current = sd.baseDefinition?.replace(/^.*\//, '');
  }
  return false;
}
