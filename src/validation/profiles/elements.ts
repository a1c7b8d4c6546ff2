import type { ElementDefinition } from '../../fhir/definitions.js';

/**
 * Element ids as profiles write them: dot-separated segments, each `name` or `name:sliceName`
 * (`Observation.code.coding:BodyWeightCode.system`). The path is the id without slice names.
 */

/** The path of an element id: `Observation.value[x]:valueQuantity.code` → `Observation.value[x].code`. */
export function pathOfId(id: string): string {
  return id
    .split('.')
    .map((segment) => segment.split(':')[0])
    .join('.');
}

/** The id of the element an element belongs to: its parent for a child, its sliced element for a slice. */
export function ownerOfId(id: string): { id: string; slice: boolean } | undefined {
  const dot = id.lastIndexOf('.');
  const colon = id.lastIndexOf(':');
  if (colon > dot) return { id: id.slice(0, colon), slice: true };
  return dot < 0 ? undefined : { id: id.slice(0, dot), slice: false };
}

/** An element's id, from its path and slice name when a definition leaves it out. */
export function idOf(element: Pick<ElementDefinition, 'id' | 'path' | 'sliceName'>): string {
  if (element.id) return element.id;
  return element.sliceName ? `${element.path}:${element.sliceName}` : element.path;
}

/** Whether `key` (`valueQuantity`) names a type of the choice element `name[x]` (`value`): the type suffix, else undefined. */
export function choiceSuffix(key: string, name: string): string | undefined {
  if (key.length <= name.length || !key.startsWith(name)) return undefined;
  const first = key.charCodeAt(name.length);
  return first >= 65 && first <= 90 ? key.slice(name.length) : undefined;
}

/** The type code among `codes` a choice suffix names: `Quantity` → Quantity, `DateTime` → dateTime. */
export function typeOfSuffix(suffix: string, codes: readonly string[]): string | undefined {
  const lower = suffix.charAt(0).toLowerCase() + suffix.slice(1);
  return codes.find((code) => code === suffix || code === lower);
}

/** The `fixed[x]` or `pattern[x]` of an element, with whether it must match exactly. */
export function requiredValueOf(element: ElementDefinition): { value: unknown; exact: boolean; key: string } | undefined {
  for (const key in element) {
    if (key.startsWith('fixed')) return { value: (element as Record<string, unknown>)[key], exact: true, key };
    if (key.startsWith('pattern')) return { value: (element as Record<string, unknown>)[key], exact: false, key };
  }
  return undefined;
}

/** Max cardinality as a number (`*` → Infinity). */
export function maxOf(element: Pick<ElementDefinition, 'max'>): number {
  return element.max === undefined || element.max === '*' ? Infinity : Number(element.max);
}
