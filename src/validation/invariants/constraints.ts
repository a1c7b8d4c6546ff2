import { getStructureDefinition, type ElementDefinition } from '../../fhir/definitions.js';
import { issue } from '../../fhir/outcome.js';
import { isRecord, type OperationOutcomeIssue } from '../../fhir/types.js';
import { invariantsAt, invariantsOf, NATIVE, type Invariant } from './catalog.js';
import { evaluateInvariant, primitiveBase, uncheckedText, type ResourceContext } from './evaluate.js';

/**
 * The invariants of a list of snapshot ElementDefinitions (a profile's) on a resource: each
 * element's constraints evaluated on every instance found at its path, with the same engines and
 * compiled-expression cache as the base validation. Constraints the base validation already
 * checks (from the core definitions, or the native ones) are left out unless `includeBase`.
 */

export interface ConstraintOptions {
  /** Also report constraints of severity warning. */
  readonly warnings?: boolean;
  /** Also evaluate constraints the core definitions declare (the base validation checks them on every write). */
  readonly includeBase?: boolean;
}

/** One instance of an element in the resource: its value, its FHIRPath location, its type for the engine. */
export interface ElementInstance {
  readonly value: unknown;
  readonly location: string;
  readonly base: string;
}

/**
 * Issues (code `invariant`, severity from the constraint) for the constraints of `elements` that
 * `resource` breaks. Elements inside slices (an id with ':') are skipped: which instances belong
 * to a slice is the profile validator's to decide; it evaluates those with `checkInstanceConstraints`.
 */
export function checkConstraints(
  resource: Record<string, unknown>,
  elements: readonly ElementDefinition[],
  options: ConstraintOptions = {},
): OperationOutcomeIssue[] {
  const found: OperationOutcomeIssue[] = [];
  const resourceType = typeof resource.resourceType === 'string' ? resource.resourceType : '';
  for (const element of elements) {
    if ((element.id ?? element.path).includes(':') || !element.constraint?.length) continue;
    const invariants = constraintsOf(element, options);
    if (invariants.length === 0) continue;
    for (const instance of instancesAt(resource, resourceType, element)) {
      found.push(...checkInstanceConstraints(instance, invariants, { resource, rootResource: resource }, options));
    }
  }
  return found;
}

/** The constraints of `invariants` broken by one element instance (a slice member, say). */
export function checkInstanceConstraints(
  instance: ElementInstance,
  invariants: readonly Invariant[],
  context: ResourceContext,
  options: ConstraintOptions = {},
): OperationOutcomeIssue[] {
  const found: OperationOutcomeIssue[] = [];
  for (const invariant of invariants) {
    if (invariant.severity === 'warning' && !options.warnings) continue;
    const verdict = evaluateInvariant(invariant.key, invariant.expression, instance.base, instance.value, context);
    if (verdict === true || (verdict === undefined && !options.warnings)) continue;
    const unchecked = verdict === undefined;
    const text = unchecked ? uncheckedText(invariant.key) : `${invariant.key}: ${invariant.human}`;
    const reported = issue(unchecked ? 'not-supported' : 'invariant', text, instance.location);
    reported.severity = unchecked ? 'information' : invariant.severity;
    found.push(reported);
  }
  return found;
}

/** An element's constraints as invariants, without the ones the base validation checks already. */
export function constraintsOf(element: ElementDefinition, options: ConstraintOptions = {}): Invariant[] {
  const all = invariantsOf(element);
  if (options.includeBase) return all;
  const base = invariantsAt(element.path);
  const sources = new Map((element.constraint ?? []).map((constraint) => [constraint.key, constraint.source]));
  return all.filter(
    (invariant) =>
      !NATIVE.has(invariant.key) &&
      !isCoreSource(sources.get(invariant.key)) &&
      !base.some((known) => known.key === invariant.key && known.expression === invariant.expression),
  );
}

const CORE_PREFIX = 'http://hl7.org/fhir/StructureDefinition/';

function isCoreSource(source: string | undefined): boolean {
  if (!source?.startsWith(CORE_PREFIX)) return false;
  return getStructureDefinition(source.slice(CORE_PREFIX.length))?.url === source;
}

/** Every instance of the element in the resource, following its path from the root ([x] included). */
export function instancesAt(resource: Record<string, unknown>, resourceType: string, element: ElementDefinition): ElementInstance[] {
  const segments = element.path.split('.');
  if (segments[0] !== resourceType) return [];
  let current: ElementInstance[] = [{ value: resource, location: resourceType, base: resourceType }];
  for (const [index, segment] of segments.slice(1).entries()) {
    const pathSoFar = segments.slice(0, index + 2).join('.');
    current = current.flatMap((instance) => children(instance, segment, pathSoFar, element));
  }
  return current;
}

function children(instance: ElementInstance, segment: string, path: string, element: ElementDefinition): ElementInstance[] {
  if (!isRecord(instance.value)) return [];
  const isChoice = segment.endsWith('[x]');
  const name = isChoice ? segment.slice(0, -3) : segment;
  const out: ElementInstance[] = [];
  for (const key of Object.keys(instance.value)) {
    const choiceType = isChoice ? choiceSuffix(key, name) : undefined;
    if (key !== name && choiceType === undefined) continue;
    const value = instance.value[key];
    const base = choiceType ?? baseOf(path, element);
    const location = `${instance.location}.${key}`;
    if (Array.isArray(value)) value.forEach((item, at) => out.push({ value: item, location: `${location}[${at}]`, base }));
    else if (value !== undefined && value !== null) out.push({ value, location, base });
  }
  return out;
}

/** 'Quantity' for valueQuantity under value[x]; undefined when the key is not a choice of `name`. */
function choiceSuffix(key: string, name: string): string | undefined {
  if (key.length <= name.length || !key.startsWith(name)) return undefined;
  const suffix = key.slice(name.length);
  if (suffix.charCodeAt(0) < 65 || suffix.charCodeAt(0) > 90) return undefined;
  const primitive = suffix.charAt(0).toLowerCase() + suffix.slice(1);
  return getStructureDefinition(primitive)?.kind === 'primitive-type' ? primitiveBase(primitive) : suffix;
}

/**
 * What the engines are told a value of the element is, when the walk that found it knows its
 * type (a choice's, from its JSON name) or not.
 */
export function instanceBase(element: ElementDefinition, type: string | undefined): string {
  if (type === undefined) return baseOf(element.path, element);
  return getStructureDefinition(type)?.kind === 'primitive-type' ? primitiveBase(type) : type;
}

/**
 * What the engines are told an instance is: its type when the path ends at the element and it
 * has one type, the definition path for backbone elements.
 */
function baseOf(path: string, element: ElementDefinition): string {
  if (path !== element.path) return path;
  const code = element.type?.length === 1 ? element.type[0]?.code : undefined;
  if (code === undefined || code === 'BackboneElement' || code === 'Element') return path;
  return getStructureDefinition(code)?.kind === 'primitive-type' ? primitiveBase(code) : code;
}
