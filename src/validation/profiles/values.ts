import { isResourceType, getStructureDefinition } from '../../fhir/definitions.js';
import { isRecord } from '../../fhir/types.js';
import { choiceSuffix, typeOfSuffix } from './elements.js';
import type { PathStep } from './discriminator-path.js';
import type { ProfileNode } from './tree.js';

/** One value of an element in a resource, where it is, and its type when the JSON names it (choices, resources). */
export interface Found {
  readonly value: unknown;
  readonly location: string;
  readonly type: string | undefined;
}

/** The values of `node`'s element in `owner` (a choice's under whichever `valueX` key is present). */
export function valuesOf(owner: Record<string, unknown>, node: ProfileNode, location: string): Found[] {
  if (!node.isChoice) return listed(owner[node.name], `${location}.${node.name}`, undefined);
  const found: Found[] = [];
  const codes = (node.element.type ?? []).map((type) => type.code);
  for (const key in owner) {
    const suffix = choiceSuffix(key, node.name);
    if (suffix !== undefined) found.push(...listed(owner[key], `${location}.${key}`, typeOfSuffix(suffix, codes) ?? typeNamed(suffix)));
  }
  return found;
}

function listed(value: unknown, location: string, type: string | undefined): Found[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return [{ value, location, type: type ?? resourceTypeOf(value) }];
  const found: Found[] = [];
  value.forEach((item, index) => {
    if (item !== null) found.push({ value: item, location: `${location}[${index}]`, type: type ?? resourceTypeOf(item) });
  });
  return found;
}

/** The type a choice suffix names: `String` → string, `Quantity` → Quantity. */
function typeNamed(suffix: string): string {
  const primitive = suffix.charAt(0).toLowerCase() + suffix.slice(1);
  return !isResourceType(suffix) && getStructureDefinition(primitive)?.kind === 'primitive-type' ? primitive : suffix;
}

function resourceTypeOf(value: unknown): string | undefined {
  return isRecord(value) && typeof value.resourceType === 'string' ? value.resourceType : undefined;
}

type Typed = { value: unknown; type: string | undefined };

/** The values a discriminator path (`coding.code`, `$this`, `extension('url').value`) reaches from a value, with their types when known. */
export function valuesAtPath(start: Found, steps: readonly PathStep[]): Typed[] {
  let current: Typed[] = [{ value: start.value, type: start.type }];
  for (const step of steps) {
    if (step.kind === 'ofType') current = current.filter((item) => item.type === step.type);
    else if (step.kind === 'extension') current = current.flatMap((item) => extensionsNamed(item.value, step.url));
    else current = current.flatMap((item) => childValues(item.value, step.name));
  }
  return current;
}

function extensionsNamed(value: unknown, url: string): Typed[] {
  if (!isRecord(value) || !Array.isArray(value.extension)) return [];
  return value.extension.filter((item) => isRecord(item) && item.url === url).map((item) => ({ value: item, type: 'Extension' }));
}

/** The values of a property, a choice's under whichever `nameX` key is present. */
function childValues(value: unknown, name: string): Typed[] {
  if (!isRecord(value)) return [];
  const next: Typed[] = [];
  for (const key in value) {
    const suffix = key === name ? '' : choiceSuffix(key, name);
    if (suffix === undefined) continue;
    const items = Array.isArray(value[key]) ? (value[key] as unknown[]) : [value[key]];
    for (const item of items) if (item !== null && item !== undefined) next.push({ value: item, type: suffix ? typeNamed(suffix) : resourceTypeOf(item) });
  }
  return next;
}

/** Navigates a fixed or pattern value by the rest of a discriminator path (`coding.code` into a CodeableConcept). */
export function navigate(value: unknown, segments: readonly string[]): unknown[] {
  let current: unknown[] = [value];
  for (const segment of segments) {
    current = current.flatMap((item) => {
      if (!isRecord(item)) return [];
      const next = item[segment];
      return next === undefined ? [] : Array.isArray(next) ? next : [next];
    });
  }
  return current;
}

/** FHIR `fixed[x]`: the same value, every property and item, nothing more. Decimals compare by value. */
export function equalsExactly(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, index) => equalsExactly(actual[index], item));
  }
  if (isRecord(expected)) {
    if (!isRecord(actual)) return false;
    const keys = Object.keys(expected);
    return keys.length === Object.keys(actual).length && keys.every((key) => equalsExactly(actual[key], expected[key]));
  }
  return actual === expected;
}

/** FHIR `pattern[x]`: every property the pattern has is in the value with that value; each pattern item matches some item. */
export function matchesPattern(actual: unknown, pattern: unknown): boolean {
  if (Array.isArray(pattern)) {
    const items = Array.isArray(actual) ? actual : [actual];
    return pattern.every((wanted) => items.some((item) => matchesPattern(item, wanted)));
  }
  if (isRecord(pattern)) {
    return isRecord(actual) && Object.keys(pattern).every((key) => matchesPattern(actual[key], pattern[key]));
  }
  return actual === pattern;
}

/** Short JSON for messages. */
export function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
