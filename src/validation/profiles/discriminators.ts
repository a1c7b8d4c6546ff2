import type { ElementDefinition } from '../../fhir/definitions.js';
import { parseDiscriminatorPath, type PathStep } from './discriminator-path.js';
import { childNamed, type ProfileNode } from './tree.js';
import { equalsExactly, matchesPattern, navigate, valuesAtPath, type Found } from './values.js';

/**
 * Which slice a value belongs to, by the slicing's discriminators (FHIR R4 profiling 5.1.0.11):
 * `value` and `pattern` compare the value found at the discriminator's path with the slice's
 * fixed or pattern value there, `exists` its presence with the slice's cardinality there, `type`
 * its type, `profile` whether it conforms to the slice's profile. A path may go through
 * `extension('url')` (into the slice's extension, or the extension's own definition when the
 * profile does not detail it) and `ofType(T)` (a choice's value of that type); one with
 * `resolve()` is not followed: the walk leaves such a slicing unchecked (validate.ts).
 */

export type Discriminator = NonNullable<NonNullable<ElementDefinition['slicing']>['discriminator']>[number];

/** What matching needs beyond the profile: conformance for the `profile` discriminator, extension definitions for `extension('url')`. */
export interface SliceLookup {
  conforms(found: Found, profileUrl: string): boolean;
  /** The root of an extension's definition, by url. */
  definition(url: string): ProfileNode | undefined;
}

export function matchesSlice(found: Found, slice: ProfileNode, discriminators: readonly Discriminator[], lookup: SliceLookup): boolean {
  return discriminators.every((discriminator) => matchesOne(found, slice, discriminator, lookup));
}

/** Whether the walk can follow every discriminator's path (not `resolve()`). */
export function followsAll(discriminators: readonly Discriminator[]): boolean {
  return discriminators.every((discriminator) => parseDiscriminatorPath(discriminator.path ?? '$this') !== undefined);
}

/** Without slicing stated: extensions are sliced by url, choices by type, anything else by nothing known. */
export function defaultDiscriminators(node: ProfileNode): Discriminator[] {
  if (node.isChoice) return [{ type: 'type', path: '$this' }];
  if (node.name === 'extension' || node.name === 'modifierExtension') return [{ type: 'value', path: 'url' }];
  return [];
}

function matchesOne(found: Found, slice: ProfileNode, discriminator: Discriminator, lookup: SliceLookup): boolean {
  const path = discriminator.path ?? '$this';
  const steps = parseDiscriminatorPath(path);
  if (!steps) return false;
  switch (discriminator.type) {
    case 'value':
    case 'pattern':
      return matchesValues(found, slice, path, steps, lookup);
    case 'exists':
      return matchesExistence(found, slice, steps, lookup);
    case 'type': {
      const codes = (elementAt(slice, steps, lookup)?.element.type ?? []).map((type) => type.code);
      return valuesAtPath(found, steps).some((value) => value.type !== undefined && codes.includes(value.type));
    }
    case 'profile': {
      const urls = (elementAt(slice, steps, lookup)?.element.type ?? []).flatMap((type) => (type.profile ?? []).filter((url): url is string => typeof url === 'string'));
      return valuesAtPath(found, steps).some((value) => urls.some((url) => lookup.conforms({ value: value.value, type: value.type, location: found.location }, url)));
    }
    default:
      return false;
  }
}

function matchesValues(found: Found, slice: ProfileNode, path: string, steps: readonly PathStep[], lookup: SliceLookup): boolean {
  const expected = expectedValues(slice, path, steps, lookup);
  if (expected.length === 0) return false;
  const actual = valuesAtPath(found, steps);
  return expected.every((wanted) => actual.some((value) => (wanted.exact ? equalsExactly(value.value, wanted.value) : matchesPattern(value.value, wanted.value))));
}

function matchesExistence(found: Found, slice: ProfileNode, steps: readonly PathStep[], lookup: SliceLookup): boolean {
  const element = elementAt(slice, steps, lookup);
  if (!element) return false;
  const present = valuesAtPath(found, steps).length > 0;
  if (element.min > 0) return present;
  return element.max === 0 ? !present : true;
}

interface Constraint {
  value: unknown;
  exact: boolean;
}

/** Per slice, the values each discriminator path expects: found once, reused for every value matched. */
const expectedBySlice = new WeakMap<ProfileNode, Map<string, Constraint[]>>();

function expectedValues(slice: ProfileNode, path: string, steps: readonly PathStep[], lookup: SliceLookup): Constraint[] {
  // Through an extension's own definition the answer depends on the project's definitions: not kept.
  if (steps.some((step) => step.kind === 'extension')) return constraintsAt(slice, steps, lookup);
  let byPath = expectedBySlice.get(slice);
  if (!byPath) expectedBySlice.set(slice, (byPath = new Map()));
  let expected = byPath.get(path);
  if (!expected) {
    expected = constraintsAt(slice, steps, lookup);
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
function constraintsAt(node: ProfileNode, steps: readonly PathStep[], lookup: SliceLookup): Constraint[] {
  if (steps.length === 0) {
    if (node.required) return [{ value: node.required.value, exact: node.required.exact }];
    return node.slices.flatMap((slice) => (slice.min > 0 ? constraintsAt(slice, [], lookup) : []));
  }
  const [step, ...rest] = steps;
  if (step.kind !== 'name') {
    const next = stepInto(node, step, lookup, rest.length > 0);
    return next ? constraintsAt(next, rest, lookup) : [];
  }
  const child = childNamed(node, step.name);
  if (!child) {
    const stated = node.required;
    const names = steps.every((one) => one.kind === 'name') ? steps.map((one) => (one.kind === 'name' ? one.name : '')) : undefined;
    return stated && names ? navigate(stated.value, names).map((value) => ({ value, exact: stated.exact })) : [];
  }
  const direct = constraintsAt(child, rest, lookup);
  if (direct.length > 0) return direct;
  return child.slices.filter((slice) => slice.min > 0).flatMap((slice) => constraintsAt(slice, rest, lookup));
}

/**
 * Where `extension('url')` or `ofType(T)` leads in a profile: the extension slice with that url
 * when the profile details it, else the extension's definition; the choice's slice for that
 * type when there is one, else the choice element itself (its rules hold for every type). At the
 * end of the path the extension slice itself (its cardinality is what `exists` compares).
 */
function stepInto(node: ProfileNode, step: PathStep, lookup: SliceLookup, further: boolean): ProfileNode | undefined {
  if (step.kind === 'name') return childNamed(node, step.name);
  if (step.kind === 'ofType') return node.slices.find((slice) => (slice.element.type ?? []).every((type) => type.code === step.type)) ?? node;
  const slice = childNamed(node, 'extension')?.slices.find((one) => extensionUrlOf(one).some((url) => url.value === step.url));
  if (slice && (!further || slice.children.some((child) => child.name !== 'url'))) return slice;
  return lookup.definition(step.url) ?? slice;
}

/** The url of an extension slice: its type profile, else its `url` child's fixed value. */
function extensionUrlOf(slice: ProfileNode): Constraint[] {
  const url = slice.element.type?.find((type) => type.code === 'Extension')?.profile?.[0] ?? childNamed(slice, 'url')?.required?.value;
  return typeof url === 'string' ? [{ value: url, exact: true }] : [];
}

function elementAt(node: ProfileNode, steps: readonly PathStep[], lookup: SliceLookup): ProfileNode | undefined {
  let current: ProfileNode | undefined = node;
  steps.forEach((step, index) => {
    current = current && stepInto(current, step, lookup, index < steps.length - 1);
  });
  return current;
}
