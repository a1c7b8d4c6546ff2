import { isRecord } from '../../fhir/types.js';
import type { ElementModel, TypeModel, TypeRef } from '../model.js';
import { invariantsAt, type Invariant, type InvariantSeverity } from './catalog.js';
import { evaluateInvariant, primitiveBase, uncheckedText } from './evaluate.js';
import { referenceTextProblem } from '../reference-text.js';
import { containedProblems, extensionIsWellFormed, hasContentBesidesId, narrativeProblem, nativeText } from './native.js';

/**
 * The invariants of the base definitions, checked while the validator walks a resource: it tells
 * this scope about each resource it enters and leaves and each value it has found well-shaped.
 * Checks that need the whole resource (dom-3 and ref-1 match local references against contained
 * ids, which may come later in the JSON) are settled when the resource is left.
 */

export type InvariantReport = (
  severity: InvariantSeverity | 'information',
  text: string,
  where: string,
  code?: 'invariant' | 'not-supported' | 'value',
) => void;

interface Frame {
  readonly value: Record<string, unknown>;
  readonly type: string;
  readonly where: string;
  readonly contained: boolean;
  /** The nearest frame that is not a contained resource: `%rootResource`. */
  readonly root: Frame;
  /** '#…' values of references, canonicals, uris and urls in this resource and the ones it contains. */
  readonly localRefs: Set<string>;
  /** ref-1: local references to check against the root's contained ids. */
  readonly refChecks: { readonly id: string; readonly where: string }[];
}

const LOCAL_REF_TYPES = new Set(['canonical', 'uri', 'url']);
const noInvariants: readonly Invariant[] = [];
const byElement = new WeakMap<ElementModel, readonly Invariant[]>();
const byType = new WeakMap<TypeModel, readonly Invariant[]>();

export class InvariantScope {
  private readonly frames: Frame[] = [];

  constructor(
    private readonly warnings: boolean,
    private readonly report: InvariantReport,
    /** This server's FHIR base, whose absolute URLs name resources here. */
    private readonly fhirBase?: string,
  ) {}

  enterResource(value: Record<string, unknown>, type: string, where: string, contained: boolean): void {
    const parent = this.frames.at(-1);
    const frame: Frame = {
      value, type, where, contained, root: undefined as unknown as Frame, localRefs: new Set(), refChecks: [],
    };
    (frame as { root: Frame }).root = contained && parent ? parent.root : frame;
    this.frames.push(frame);
  }

  leaveResource(): void {
    const frame = this.frames.pop();
    if (!frame) return;
    this.evaluate(invariantsAt(frame.type), frame.type, frame.value, frame.where, frame);
    if (Array.isArray(frame.value.contained)) this.checkContained(frame);
    if (frame.root === frame) this.checkLocalReferences(frame);
    else this.mergeInto(frame, this.frames.at(-1));
  }

  /** Invariants of a well-shaped object at an element: its own, its type's, and the native ones. */
  checkObject(value: Record<string, unknown>, element: ElementModel, model: TypeModel, where: () => string): void {
    const frame = this.frames.at(-1);
    if (!frame) return;
    if (!hasContentBesidesId(value)) this.report('error', nativeText('ele-1'), where());
    if (model.name === 'Extension' && !extensionIsWellFormed(value)) this.report('error', nativeText('ext-1'), where());
    if (model.name === 'Reference') this.noteReference(value, frame, where);
    const ownInvariants = elementInvariants(element, model);
    if (ownInvariants.length > 0) this.evaluate(ownInvariants, baseOf(model), value, where, frame);
    const ofType = typeInvariants(model);
    if (ofType.length > 0) this.evaluate(ofType, model.name, value, where, frame);
  }

  /** Invariants on a primitive element (few), narrative rules, and local references for dom-3. */
  checkPrimitive(value: unknown, element: ElementModel, type: TypeRef, where: () => string): void {
    const frame = this.frames.at(-1);
    if (!frame) return;
    if (typeof value === 'string' && value.startsWith('#') && (LOCAL_REF_TYPES.has(type.code) || element.name === 'reference')) {
      frame.localRefs.add(value);
    }
    if (type.code === 'xhtml' && typeof value === 'string') {
      const broken = narrativeProblem(value);
      if (broken) this.report('error', nativeText(broken), where());
    }
    const ownInvariants = elementInvariants(element, undefined);
    if (ownInvariants.length > 0) this.evaluate(ownInvariants, primitiveBase(type.code), value, where, frame);
  }

  /** ele-1 on a primitive's `_name` object: with no value beside it, it needs more than an id. */
  checkPrimitiveElement(value: Record<string, unknown>, hasValue: boolean, where: () => string): void {
    if (!hasValue && !hasContentBesidesId(value)) this.report('error', nativeText('ele-1'), where());
  }

  private evaluate(
    invariants: readonly Invariant[],
    base: string,
    node: unknown,
    where: string | (() => string),
    frame: Frame,
  ): void {
    const context = { resource: frame.value, rootResource: frame.root.value };
    for (const invariant of invariants) {
      if (invariant.severity === 'warning' && !this.warnings) continue;
      const verdict = evaluateInvariant(invariant.key, invariant.expression, base, node, context);
      if (verdict === true || (verdict === undefined && !this.warnings)) continue;
      const at = typeof where === 'string' ? where : where();
      // Unchecked is said in $validate (warnings asked for); a write cannot refuse on it.
      if (verdict === undefined) this.report('information', uncheckedText(invariant.key), at, 'not-supported');
      else this.report(invariant.severity, `${invariant.key}: ${invariant.human}`, at);
    }
  }

  private noteReference(value: Record<string, unknown>, frame: Frame, where: () => string): void {
    const reference = value.reference;
    const problem = typeof reference === 'string' ? referenceTextProblem(reference, frame.root.type, this.fhirBase) : undefined;
    if (problem) this.report('error', `Invalid reference ${JSON.stringify(reference)} at ${where()}.reference: ${problem}`, `${where()}.reference`, 'value');
    if (typeof reference !== 'string' || !reference.startsWith('#') || reference.length === 1) return;
    frame.root.refChecks.push({ id: reference.slice(1), where: where() });
  }

  /** dom-2, dom-4, dom-5 on each contained resource, dom-3 on its being referred to. */
  private checkContained(frame: Frame): void {
    const contained = frame.value.contained as unknown[];
    for (const [index, resource] of contained.entries()) {
      if (!isRecord(resource)) continue;
      const at = `${frame.where}.contained[${index}]`;
      for (const key of containedProblems(resource)) this.report('error', nativeText(key), at);
      if (typeof resource.id === 'string' && !frame.localRefs.has(`#${resource.id}`) && !refersToContainer(resource)) {
        this.report('error', `${nativeText('dom-3')} (contained[${index}] has id "${resource.id}")`, frame.where);
      }
    }
  }

  /** ref-1: every '#id' reference in the resource or its contained resources names a contained id. */
  private checkLocalReferences(frame: Frame): void {
    if (frame.refChecks.length === 0) return;
    const ids = new Set<unknown>();
    if (Array.isArray(frame.value.contained)) for (const resource of frame.value.contained) if (isRecord(resource)) ids.add(resource.id);
    for (const check of frame.refChecks) {
      if (!ids.has(check.id)) this.report('error', `${nativeText('ref-1')} (no contained resource has id "${check.id}")`, check.where);
    }
  }

  private mergeInto(frame: Frame, parent: Frame | undefined): void {
    if (!parent) return;
    for (const ref of frame.localRefs) parent.localRefs.add(ref);
  }
}

/** dom-3's other way out: the contained resource refers to its container with '#'. */
function refersToContainer(resource: unknown): boolean {
  if (Array.isArray(resource)) return resource.some(refersToContainer);
  if (!isRecord(resource)) return false;
  for (const key in resource) {
    const value = resource[key];
    if (value === '#' || (typeof value === 'object' && value !== null && refersToContainer(value))) return true;
  }
  return false;
}

/** A complex type's own invariants (qty-3 on every Quantity); a backbone's model, named by its path, has none. */
function typeInvariants(model: TypeModel): readonly Invariant[] {
  let found = byType.get(model);
  if (found === undefined) {
    found = model.name.includes('.') ? noInvariants : invariantsAt(model.name);
    byType.set(model, found);
  }
  return found;
}

/** The type fhirpath.js is told the node has: the backbone's definition path or the type name. */
function baseOf(model: TypeModel): string {
  return model.name;
}

/**
 * An element's own invariants, plus those of the element a contentReference points to (a nested
 * Questionnaire.item is an item, bound by the item rules).
 */
function elementInvariants(element: ElementModel, model: TypeModel | undefined): readonly Invariant[] {
  let found = byElement.get(element);
  if (found === undefined) {
    const own = invariantsAt(element.path);
    const referenced = model && model.name !== element.path && model.name.includes('.') ? invariantsAt(model.name) : noInvariants;
    const keys = new Set(own.map((invariant) => invariant.key));
    found = [...own, ...referenced.filter((invariant) => !keys.has(invariant.key))];
    if (found.length === 0) found = noInvariants;
    byElement.set(element, found);
  }
  return found;
}
