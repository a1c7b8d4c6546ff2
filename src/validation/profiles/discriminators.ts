import type { ElementDefinition } from '../../fhir/definitions.js';
import { childNamed, type ProfileNode } from './tree.js';
import { equalsExactly, matchesPattern, navigate, valuesAtPath, type Found } from './values.js';

/**
 * Which slice a value belongs to, by the slicing's discriminators (FHIR R4 profiling 5.1.0.11):
 * `value` and `pattern` compare the value found at the discriminator's path with the slice's
 * fixed or pattern value there, `exists` its presence with the slice's cardinality there, `type`
 * its type, `profile` whether it conforms to the slice's profile. FHIRPath functions in a path
 * (`extension('url')`, `resolve()`, `ofType()`) are not followed: the walk leaves such a slicing
 * unchecked (validate.ts).
 */

export type Discriminator = NonNullable<NonNullable<ElementDefinition['slicing']>['discriminator']>[number];

/** Whether a value conforms to a profile, for the `profile` discriminator. */
export type ConformanceTest = (found: Found, profileUrl: string) => boolean;

export function matchesSlice(found: Found, slice: ProfileNode, discriminators: readonly Discriminator[], conforms: ConformanceTest): boolean {
  return discriminators.every((discriminator) => matchesOne(found, slice, discriminator, conforms));
}

/** Without slicing stated: extensions are sliced by url, choices by type, anything else by nothing known. */
export function defaultDiscriminators(node: ProfileNode): Discriminator[] {
  if (node.isChoice) return [{ type: 'type', path: '$this' }];
  if (node.name === 'extension' || node.name === 'modifierExtension') return [{ type: 'value', path: 'url' }];
  return [];
}

function matchesOne(found: Found, slice: ProfileNode, discriminator: Discriminator, conforms: ConformanceTest): boolean {
  const path = discriminator.path ?? '$this';
  if (path.includes('(')) return false;
  switch (discriminator.type) {
    case 'value':
    case 'pattern':
      return matchesValues(found, slice, path);
    case 'exists':
      return matchesExistence(found, slice, path);
    case 'type': {
      const codes = (elementAt(slice, path)?.element.type ?? []).map((type) => type.code);
      return valuesAtPath(found, path).some((value) => value.type !== undefined && codes.includes(value.type));
    }
    case 'profile': {
      const urls = (elementAt(slice, path)?.element.type ?? []).flatMap((type) => (type.profile ?? []).filter((url): url is string => typeof url === 'string'));
      return valuesAtPath(found, path).some((value) => urls.some((url) => conforms({ value: value.value, type: value.type, location: found.location }, url)));
    }
    default:
      return false;
  }
}

function matchesValues(found: Found, slice: ProfileNode, path: string): boolean {
  const expected = expectedValues(slice, path);
  if (expected.length === 0) return false;
  const actual = valuesAtPath(found, path);
  return expected.every((wanted) => actual.some((value) => (wanted.exact ? equalsExactly(value.value, wanted.value) : matchesPattern(value.value, wanted.value))));
}

function matchesExistence(found: Found, slice: ProfileNode, path: string): boolean {
  const element = elementAt(slice, path);
  if (!element) return false;
  const present = valuesAtPath(found, path).length > 0;
  if (element.min > 0) return present;
  return element.max === 0 ? !present : true;
}

interface Constraint {
  value: unknown;
  exact: boolean;
}

/** Per slice, the values each discriminator path expects: found once, reused for every value matched. */
const expectedBySlice = new WeakMap<ProfileNode, Map<string, Constraint[]>>();

function expectedValues(slice: ProfileNode, path: string): Constraint[] {
  let byPath = expectedBySlice.get(slice);
  if (!byPath) expectedBySlice.set(slice, (byPath = new Map()));
  let expected = byPath.get(path);
  if (!expected) {
    expected = constraintsAt(slice, path === '$this' ? [] : path.split('.').map(stripChoice));
    if (expected.length === 0 && path === 'url') expected = extensionUrlOf(slice);
    byPath.set(path, expected);
  }
  return expected;
}

/**
 * The fixed or pattern values a slice states at a path: on the element there, else inside the
 * fixed or pattern value of an element above it, else on the slices of the element there (a
 * component slice's `code.coding` fixed by its coding slice).
 */
function constraintsAt(node: ProfileNode, segments: readonly string[]): Constraint[] {
  if (segments.length === 0) {
    if (node.required) return [{ value: node.required.value, exact: node.required.exact }];
    return node.slices.flatMap((slice) => (slice.min > 0 ? constraintsAt(slice, []) : []));
  }
  const child = childNamed(node, segments[0]);
  if (!child) {
    const stated = node.required;
    return stated ? navigate(stated.value, segments).map((value) => ({ value, exact: stated.exact })) : [];
  }
  const direct = constraintsAt(child, segments.slice(1));
  if (direct.length > 0) return direct;
  return child.slices.filter((slice) => slice.min > 0).flatMap((slice) => constraintsAt(slice, segments.slice(1)));
}

/** An extension slice that names its definition by type profile rather than by a fixed url. */
function extensionUrlOf(slice: ProfileNode): Constraint[] {
  const url = slice.element.type?.find((type) => type.code === 'Extension')?.profile?.[0];
  return url ? [{ value: url, exact: true }] : [];
}

function elementAt(node: ProfileNode, path: string): ProfileNode | undefined {
  if (path === '$this') return node;
  let current: ProfileNode | undefined = node;
  for (const segment of path.split('.')) {
    current = current && childNamed(current, stripChoice(segment));
  }
  return current;
}

function stripChoice(segment: string): string {
  return segment.endsWith('[x]') ? segment.slice(0, -3) : segment;
}
