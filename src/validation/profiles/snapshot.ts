import { getStructureDefinition, type ElementDefinition, type StructureDefinition } from '../../fhir/definitions.js';
import { choiceSuffix, idOf, maxOf, pathOfId, typeOfSuffix } from './elements.js';

/**
 * Snapshot generation: a profile's differential merged onto its base's snapshot, as
 * `StructureDefinition.snapshot` lists it. Pure: the base snapshot comes from the caller, which
 * finds it among the core definitions, the shipped profiles or the project's own (and generates
 * it first when the base has a differential only). The rules it applies, in differential order:
 * - an element is found by its id (one left out is made from its path, a child listed after a
 *   slice belonging to that slice); a choice named by type (`valueQuantity`) is the slice
 *   `value[x]:valueQuantity` of the choice, which is restricted to that type;
 * - a child of a complex type the snapshot does not list yet (`code.coding.system`) is found
 *   after listing the children of that type (or of the element a contentReference names);
 * - a new slice starts as a copy of its sliced element and its children, with min 0;
 * - what the differential states replaces the base's value, except `constraint` and
 *   `condition`, which are added to the base's; a `fixed[x]` or `pattern[x]` replaces the other.
 */

export class SnapshotError extends Error {
  constructor(
    message: string,
    /** Where in the StructureDefinition the problem is. */
    readonly expression: string,
  ) {
    super(message);
  }
}

export function generateSnapshot(profile: StructureDefinition, baseSnapshot: readonly ElementDefinition[]): ElementDefinition[] {
  const working = new WorkingSnapshot(baseSnapshot);
  const idsByPath = new Map<string, string>();
  (profile.differential?.element ?? []).forEach((stated, index) => {
    const where = `StructureDefinition.differential.element[${index}]`;
    const element = stated as ElementDefinition;
    const id = element.id ?? contextualId(element, idsByPath);
    idsByPath.set(element.path, id);
    merge(working.locate(id, where), element, where);
  });
  return working.elements;
}

/**
 * The id of a differential element that has none, from the elements before it: a child listed
 * after a slice belongs to that slice (`Patient.identifier:mrn` then `Patient.identifier.system`).
 */
function contextualId(element: ElementDefinition, idsByPath: ReadonlyMap<string, string>): string {
  const dot = element.path.lastIndexOf('.');
  const parent = dot < 0 ? undefined : idsByPath.get(element.path.slice(0, dot));
  const own = parent === undefined ? element.path : `${parent}${element.path.slice(dot)}`;
  return element.sliceName ? `${own}:${element.sliceName}` : own;
}

class WorkingSnapshot {
  readonly elements: ElementDefinition[];

  constructor(base: readonly ElementDefinition[]) {
    this.elements = base.map((element) => ({ ...structuredClone(element), id: idOf(element) }));
  }

  /** The snapshot element a differential element's id names, made when it is a new slice or an unlisted child. */
  locate(id: string, where: string): ElementDefinition {
    const segments = id.split('.');
    let current = segments[0];
    if (this.indexOf(current) < 0) {
      throw new SnapshotError(`Unknown element ${current}: the differential must start at the profiled type ${this.elements[0]?.path}`, where);
    }
    for (const segment of segments.slice(1)) {
      const [name, slice] = splitSegment(segment);
      current = this.child(current, name, where);
      if (slice !== undefined) current = this.slice(current, slice);
    }
    return this.elements[this.indexOf(current)];
  }

  private indexOf(id: string): number {
    return this.elements.findIndex((element) => element.id === id);
  }

  private child(parent: string, name: string, where: string, expanded = false): string {
    const exact = `${parent}.${name}`;
    if (this.indexOf(exact) >= 0) return exact;
    const choice = this.choice(parent, name, where);
    if (choice) return choice;
    if (!expanded && this.expand(parent, where)) return this.child(parent, name, where, true);
    throw new SnapshotError(`Unknown element ${pathOfId(exact)}: ${pathOfId(parent)} has no element "${name}"`, where);
  }

  /** `valueQuantity` under `parent`: the choice's slice for that type, made (and the choice restricted to it) when new, as HL7's generator does. */
  private choice(parent: string, name: string, where: string): string | undefined {
    for (const element of this.elements) {
      const id = element.id!;
      if (!id.startsWith(`${parent}.`) || !id.endsWith('[x]') || id.indexOf('.', parent.length + 1) >= 0) continue;
      const suffix = choiceSuffix(name, id.slice(parent.length + 1, -3));
      if (suffix === undefined) continue;
      const type = typeOfSuffix(suffix, (element.type ?? []).map((t) => t.code));
      if (!type) throw new SnapshotError(`Type ${suffix} is not allowed for ${pathOfId(id)} by the base`, where);
      if (this.indexOf(`${id}:${name}`) < 0) {
        element.type = element.type!.filter((t) => t.code === type);
        element.slicing ??= { discriminator: [{ type: 'type', path: '$this' }], ordered: false, rules: 'closed' };
      }
      return this.slice(id, name);
    }
    return undefined;
  }

  /** Lists the children of an element that has none listed, from its type or its contentReference; false when it has none. */
  private expand(id: string, where: string): boolean {
    const index = this.indexOf(id);
    const element = this.elements[index];
    const children = element.contentReference ? this.referencedChildren(element.contentReference) : typeChildren(element, where);
    if (children.length === 0) return false;
    const prefix = element.contentReference ? element.contentReference.slice(element.contentReference.indexOf('#') + 1) : undefined;
    const rebased = children.map((child) => {
      const rest = prefix ? child.id!.slice(prefix.length) : child.id!.slice(child.id!.indexOf('.'));
      const childId = `${id}${rest}`;
      return { ...structuredClone(child), id: childId, path: pathOfId(childId) };
    });
    this.elements.splice(index + 1, 0, ...rebased);
    return true;
  }

  private referencedChildren(reference: string): ElementDefinition[] {
    const target = reference.slice(reference.indexOf('#') + 1);
    return this.elements.filter((element) => element.id!.startsWith(`${target}.`));
  }

  /** The slice `name` of element `sliced`, made from a copy of it and its children when new. */
  private slice(sliced: string, name: string): string {
    const id = `${sliced}:${name}`;
    if (this.indexOf(id) >= 0) return id;
    const index = this.indexOf(sliced);
    const base = this.elements[index];
    const copy: ElementDefinition = { ...structuredClone(base), id, sliceName: name, min: 0 };
    delete copy.slicing;
    const choice = sliced.endsWith('[x]') ? choiceSuffix(name, sliced.slice(sliced.lastIndexOf('.') + 1, -3)) : undefined;
    if (choice) copy.type = (copy.type ?? []).filter((t) => t.code === typeOfSuffix(choice, [t.code]));
    const children = this.elements
      .filter((element) => element.id!.startsWith(`${sliced}.`))
      .map((element) => ({ ...structuredClone(element), id: `${id}${element.id!.slice(sliced.length)}` }));
    this.elements.splice(this.endOf(sliced, index), 0, copy, ...children);
    return id;
  }

  /** The index after an element, its children and its slices. */
  private endOf(id: string, index: number): number {
    let end = index + 1;
    while (end < this.elements.length) {
      const next = this.elements[end].id!;
      if (!next.startsWith(`${id}.`) && !next.startsWith(`${id}:`)) break;
      end++;
    }
    return end;
  }
}

function splitSegment(segment: string): [string, string | undefined] {
  const colon = segment.indexOf(':');
  return colon < 0 ? [segment, undefined] : [segment.slice(0, colon), segment.slice(colon + 1)];
}

/** The elements of an element's single type, below its root (`CodeableConcept.coding`...). */
function typeChildren(element: ElementDefinition, where: string): ElementDefinition[] {
  const types = element.type ?? [];
  if (types.length > 1) {
    throw new SnapshotError(`${element.path} has several types: name one (such as ${element.path.replace('[x]', 'Quantity')}) to constrain its elements`, where);
  }
  const code = types[0]?.code;
  const definition = code ? getStructureDefinition(code) : undefined;
  return definition?.snapshot?.element.slice(1).map((child) => ({ ...child, id: idOf(child) })) ?? [];
}

const APPENDED = new Set(['constraint', 'condition']);

/** Applies what a differential element states onto its snapshot element. */
function merge(target: ElementDefinition, change: ElementDefinition, where: string): void {
  const into = target as Record<string, unknown>;
  for (const [key, value] of Object.entries(change)) {
    if (key === 'id' || key === 'path' || value === undefined) continue;
    if (APPENDED.has(key)) into[key] = appended(into[key], value);
    else if (key.startsWith('fixed') || key.startsWith('pattern')) {
      for (const old of Object.keys(into)) if (old.startsWith('fixed') || old.startsWith('pattern')) delete into[old];
      into[key] = structuredClone(value);
    } else if (key === 'type') {
      checkTypes(target, change.type ?? [], where);
      into[key] = structuredClone(value);
    } else into[key] = structuredClone(value);
  }
  if (maxOf(target) < (target.min ?? 0)) {
    throw new SnapshotError(`${target.id} has min ${target.min} above its max ${target.max}`, where);
  }
}

function appended(base: unknown, added: unknown): unknown[] {
  const list = Array.isArray(base) ? [...base] : [];
  for (const item of Array.isArray(added) ? added : [added]) {
    const key = (item as { key?: string }).key;
    const same = list.findIndex((old) => (key !== undefined ? (old as { key?: string }).key === key : old === item));
    if (same >= 0) list[same] = structuredClone(item);
    else list.push(structuredClone(item));
  }
  return list;
}

/** A profile narrows types; it cannot allow a type its base does not. */
function checkTypes(target: ElementDefinition, types: NonNullable<ElementDefinition['type']>, where: string): void {
  const allowed = new Set((target.type ?? []).map((type) => type.code));
  // Primitives may be restated as a close kin (string for markdown, uri for a FHIRPath System.String).
  if (allowed.size === 0 || [...allowed].some((code) => !isComplexType(code))) return;
  for (const type of types) {
    if (!allowed.has(type.code) && !allowed.has('Resource') && !allowed.has('Element') && !allowed.has('BackboneElement')) {
      throw new SnapshotError(`Type ${type.code} is not allowed for ${target.path} by the base (allowed: ${[...allowed].join(', ')})`, where);
    }
  }
}

function isComplexType(code: string): boolean {
  const first = code.charCodeAt(0);
  return first >= 65 && first <= 90;
}
