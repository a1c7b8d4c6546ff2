import { isRecord } from '../fhir/types.js';
import { errors } from '../fhir/outcome.js';
import { resolveModel, type Slot, type TypeModel } from '../validation/model.js';
import { choiceCandidates, convertAnswer, type Answer } from './answers.js';
import type { Json } from './questionnaire.js';

/**
 * Writing values into a resource being extracted, by definition path (`Patient.name.given`
 * below `Patient`): intermediate elements are made once and shared by sibling items, a group
 * item opens a new element per repetition, and each value is converted to the element's type.
 */

/** Where values are written: an object of `model`'s type at definition path `base`. */
export interface Target {
  readonly base: string;
  readonly obj: Json;
  readonly model: TypeModel;
  /** The resource-level target an element target (a group's `Patient.name`) sits in. */
  readonly resource?: Target;
  /** The profile url a definitionExtract opened the resource for: items naming another profile write elsewhere. */
  readonly definition?: string;
}

const CORE = 'http://hl7.org/fhir/StructureDefinition/';

/**
 * The element path below the target that an item's definition names, when the definition is for
 * the target's resource: its profile, or the core type (several definitionExtracts on one item
 * open a resource each, and each item's answers go to the one its definition names).
 */
export function pathIn(definition: unknown, target: Target): string | undefined {
  if (typeof definition !== 'string') return undefined;
  const canonical = definition.split('#')[0].split('|')[0];
  const own = target.definition;
  if (own !== undefined && canonical !== own && !canonical.startsWith(CORE)) return undefined;
  return relativePath(definition, target.base);
}

/** The element path below `base` that a definition (`<profile url>#Patient.name.given`) names, without slice names. */
export function relativePath(definition: unknown, base: string): string | undefined {
  if (typeof definition !== 'string' || !definition.includes('#')) return undefined;
  const path = definition.slice(definition.indexOf('#') + 1).replace(/:[^.]+/g, '');
  return path.startsWith(`${base}.`) ? path.slice(base.length + 1) : undefined;
}

/** Walks `path` but its last step from the target, reusing (or making) one object per element on the way. */
function descend(target: Target, steps: string[], linkId: string): Target {
  let { obj, model } = target;
  for (const step of steps) {
    const slot = slotOf(model, step, linkId);
    const next = resolveModel(slot.type);
    if (!next) throw unknownElement(linkId, step);
    if (slot.element.isArray) {
      const list = (obj[step] ??= []) as Json[];
      if (list.length === 0) list.push({});
      obj = list[list.length - 1];
    } else {
      obj = (obj[step] ??= {}) as Json;
    }
    model = next;
  }
  return { base: target.base, obj, model, resource: target.resource };
}

/** A new element at `path` (a new item of a repeating one) for a group item's answers. */
export function elementTarget(target: Target, path: string, linkId: string): Target {
  const steps = path.split('.');
  const last = steps.pop()!;
  const parent = descend(target, steps, linkId);
  const slot = slotOf(parent.model, last, linkId);
  const model = resolveModel(slot.type);
  if (!model) throw unknownElement(linkId, path);
  const child: Json = {};
  if (slot.element.isArray) ((parent.obj[last] ??= []) as Json[]).push(child);
  else parent.obj[last] = child;
  return { base: `${target.base}.${path}`, obj: child, model, resource: target.resource ?? target, definition: target.definition };
}

export function setAnswer(target: Target, path: string, answer: Answer, linkId: string): void {
  const steps = path.split('.');
  const last = steps.pop()!;
  const parent = descend(target, steps, linkId);
  const [key, slot, value] = leafValue(parent.model, last, answer, linkId);
  if (slot.element.isArray) ((parent.obj[key] ??= []) as unknown[]).push(value);
  else parent.obj[key] = value;
}

/** The JSON key, slot and converted value an answer takes at element `name` (`value[x]` picks a type that fits). */
function leafValue(model: TypeModel, name: string, answer: Answer, linkId: string): [string, Slot, unknown] {
  if (name.endsWith('[x]')) {
    const stem = name.slice(0, -3);
    for (const type of choiceCandidates(answer)) {
      const key = `${stem}${type[0].toUpperCase()}${type.slice(1)}`;
      const slot = model.slots.get(key);
      const value = slot ? convertAnswer(answer, type) : undefined;
      if (slot && value !== undefined) return [key, slot, value];
    }
    throw cannotHold(linkId, name, answer);
  }
  const slot = slotOf(model, name, linkId);
  const value = convertAnswer(answer, slot.type.code);
  if (value === undefined) throw cannotHold(linkId, name, answer);
  return [name, slot, value];
}

function slotOf(model: TypeModel, name: string, linkId: string): Slot {
  const slot = model.slots.get(name);
  if (!slot || slot.isPrimitiveExtension) throw unknownElement(linkId, name);
  return slot;
}

function unknownElement(linkId: string, name: string) {
  return errors.invalid(`The definition of item "${linkId}" names "${name}", which is no element that answers can be written to`, 'Questionnaire.item.definition');
}

export function cannotHold(linkId: string, name: string, answer: Answer) {
  return errors.invalid(`Item "${linkId}": its ${answer.type} answer cannot be written to element "${name}" (definition-based extraction)`, 'QuestionnaireResponse.item');
}

/** Removes the objects and lists that group items opened but no answer filled (FHIR JSON has no empty ones). */
export function pruneEmpty(value: Json): void {
  for (const [key, child] of Object.entries(value)) {
    if (Array.isArray(child)) {
      for (const item of child) if (isRecord(item)) pruneEmpty(item);
      const kept = child.filter((item) => !(isRecord(item) && Object.keys(item).length === 0));
      if (kept.length === 0) delete value[key];
      else value[key] = kept;
    } else if (isRecord(child)) {
      pruneEmpty(child);
      if (Object.keys(child).length === 0) delete value[key];
    }
  }
}

