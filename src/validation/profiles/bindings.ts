import { getStructureDefinition, type ElementDefinition } from '../../fhir/definitions.js';
import { requiredBindingCodes } from '../../fhir/required-bindings.js';
import { isRecord } from '../../fhir/types.js';
import type { BindingStrength, ProfileBinding } from '../resource-checks.js';

/**
 * The bindings a profile adds to its elements (a value set, or a strength, the base definition
 * does not state): decided in memory when the value set expands from the shipped definitions,
 * otherwise handed to the terminology engine (a value set the project stores, over its own code
 * systems or HL7's), for `code`, Coding, CodeableConcept and Quantity elements alike.
 */

/** A binding of a profile's element; `allowed` is undefined when the shipped definitions cannot expand the value set. */
export interface AddedBinding {
  readonly valueSet: string;
  readonly strength: BindingStrength;
  readonly allowed: ReadonlySet<string> | undefined;
}

const STRENGTHS = new Set<string>(['required', 'extensible', 'preferred']);
const added = new WeakMap<ElementDefinition, AddedBinding | null>();

/** The binding the profile states on the element that the base does not, computed once per element. */
export function addedBinding(element: ElementDefinition): AddedBinding | undefined {
  let found = added.get(element);
  if (found === undefined) {
    found = null;
    const { binding, path } = element;
    const strength = binding?.strength;
    if (strength && STRENGTHS.has(strength) && binding.valueSet && !baseBinds(path, binding.valueSet, strength)) {
      const codes = requiredBindingCodes(binding.valueSet);
      found = { valueSet: binding.valueSet, strength: strength as BindingStrength, allowed: codes ? new Set(codes) : undefined };
    }
    added.set(element, found);
  }
  return found ?? undefined;
}

/** Whether the base definition already binds the element to that value set with that strength (checked with the resource's structure or by the terminology check). */
function baseBinds(path: string, valueSet: string, strength: string): boolean {
  const type = path.slice(0, path.indexOf('.') < 0 ? path.length : path.indexOf('.'));
  const binding = getStructureDefinition(type)?.snapshot?.element.find((element) => element.path === path)?.binding;
  return binding?.strength === strength && binding.valueSet === valueSet;
}

const CODED_TYPES = new Set(['code', 'Coding', 'CodeableConcept', 'Quantity']);

/**
 * The value as the terminology engine judges it: a bare `code` (its code systems are the value
 * set's), a Coding, a CodeableConcept, or a Quantity's `system` and `code` taken as a Coding.
 * Undefined for values of other types.
 */
export function deferredBinding(value: unknown, type: string | undefined, binding: AddedBinding, location: string, profile: string): ProfileBinding | undefined {
  if (!type || !CODED_TYPES.has(type)) return undefined;
  const common = { valueSet: binding.valueSet.split('|')[0], strength: binding.strength, expression: location, profile };
  if (type === 'code') return typeof value === 'string' ? { ...common, type: 'code', value: { code: value } } : undefined;
  if (!isRecord(value)) return undefined;
  if (type === 'Quantity') {
    // A Quantity without a code states no unit to judge.
    return typeof value.code === 'string' ? { ...common, type: 'Coding', value: { system: value.system, code: value.code } } : undefined;
  }
  return { ...common, type: type as 'Coding' | 'CodeableConcept', value };
}

/** The codes of a value: a code, a Coding's or a Quantity's code, a CodeableConcept's codings' codes. */
export function codesOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (!isRecord(value)) return [];
  if (typeof value.code === 'string') return [value.code];
  if (!Array.isArray(value.coding)) return [];
  return value.coding.flatMap((coding) => (isRecord(coding) && typeof coding.code === 'string' ? [coding.code] : []));
}
