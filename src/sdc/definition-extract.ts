import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { getTypeModel, resolveModel, type Slot, type TypeModel } from '../validation/model.js';
import { entryRequestOf, type EntryRequest } from './entry-request.js';
import { answerValue, choiceCandidates, convertAnswer, type Answer } from './answers.js';
import { extensionOf, listOf, SDC, type IndexedItem, type Json } from './questionnaire.js';

/**
 * Definition-based extraction (SDC "Form Data Extraction", definition-based): an
 * `sdc-questionnaire-itemExtractionContext` on the Questionnaire or on a group item opens a
 * resource (one per repetition of the group); the answers of the items below it whose
 * `definition` names an element of that resource (`http://hl7.org/fhir/StructureDefinition/Patient#Patient.name.given`)
 * are written into it, converted to the element's type. A group item with a definition
 * (`Patient.name`) opens one element per repetition for the items below it.
 */

const CONTEXT = `${SDC}sdc-questionnaire-itemExtractionContext`;
/** SDC 4's successor of itemExtractionContext: the resource's StructureDefinition (a core type or a profile). */
const DEFINITION_EXTRACT = `${SDC}sdc-questionnaire-definitionExtract`;
const CORE_DEFINITION = 'http://hl7.org/fhir/StructureDefinition/';

/** The extension that opens a resource on an item or the Questionnaire, if any. */
function contextOf(element: Json): Json | undefined {
  return extensionOf(element, CONTEXT) ?? extensionOf(element, DEFINITION_EXTRACT);
}

/** A resource the extraction made, and the version it replaces when it updates a stored one. */
export interface Extracted {
  readonly resource: Resource;
  readonly replaces?: { readonly id: string; readonly versionId: string };
  /** Set by a definitionExtract's expressions. */
  readonly entry?: EntryRequest;
}

/** Finds the stored resources an `application/x-fhir-query` context names (`Patient?identifier=...`). */
export type ContextSearch = (query: string) => Promise<Resource[]>;

/** Where answers are written: an object of `model`'s type at definition path `base`. */
interface Target {
  readonly base: string;
  readonly obj: Json;
  readonly model: TypeModel;
}

interface Opened extends Target {
  readonly root: Json;
  readonly replaces?: Extracted['replaces'];
}

export async function definitionExtract(
  response: Resource,
  questionnaire: Resource,
  index: ReadonlyMap<string, IndexedItem>,
  find: ContextSearch,
): Promise<Extracted[]> {
  const walker = new DefinitionWalker(response, index, find);
  const rootContext = contextOf(questionnaire as Json);
  if (rootContext) await walker.inContext(rootContext, 'the Questionnaire', response as Json, (opened) => walker.walk(response.item, opened));
  else await walker.walk(response.item, undefined);
  return walker.made;
}

/** One walk over a response's items, carrying the element answers are written to. */
class DefinitionWalker {
  readonly made: Extracted[] = [];

  constructor(
    private readonly response: Resource,
    private readonly index: ReadonlyMap<string, IndexedItem>,
    private readonly find: ContextSearch,
  ) {}

  async walk(items: unknown, target: Target | undefined): Promise<void> {
    for (const answered of listOf(items)) {
      const linkId = String(answered.linkId);
      const question = typeof answered.linkId === 'string' ? this.index.get(answered.linkId) : undefined;
      const context = question && contextOf(question.item);
      const path = question && target ? relativePath(question.item.definition, target.base) : undefined;
      if (context) {
        await this.inContext(context, `item "${linkId}"`, answered, (opened) => this.walkChildren(answered, opened));
      } else if (question && target && path && question.item.type === 'group') {
        await this.walk(answered.item, elementTarget(target, path, linkId));
      } else if (target && path) {
        await this.writeAnswers(answered, target, path, linkId);
      } else {
        await this.walkChildren(answered, target);
      }
    }
  }

  /** Opens the context's resource, walks within it, and keeps the resource when answers were written to it. */
  async inContext(context: Json, where: string, scope: Json, within: (opened: Opened) => Promise<void>): Promise<void> {
    const opened = await openContext(context, where, this.find);
    const entry = context.url === DEFINITION_EXTRACT ? entryRequestOf(context, scope, this.response) : undefined;
    await within(opened);
    pruneEmpty(opened.root);
    const { resourceType: _type, meta: _meta, ...content } = opened.root;
    if (Object.keys(content).length === 0 && !opened.replaces) return;
    fillSubject(opened, this.response);
    this.made.push({ resource: opened.root as Resource, replaces: opened.replaces, entry });
  }

  private async writeAnswers(answered: Json, target: Target, path: string, linkId: string): Promise<void> {
    for (const answer of listOf(answered.answer)) {
      const value = answerValue(answer);
      if (value) setAnswer(target, path, value, linkId);
      await this.walk(answer.item, target);
    }
  }

  private async walkChildren(answered: Json, target: Target | undefined): Promise<void> {
    await this.walk(answered.item, target);
    for (const answer of listOf(answered.answer)) await this.walk(answer.item, target);
  }
}

/** A new resource of the context's type (`valueCode`), or the stored one its query finds (`valueExpression`). */
async function openContext(context: Json, where: string, find: ContextSearch): Promise<Opened> {
  const at = 'Questionnaire.extension';
  if (context.url === DEFINITION_EXTRACT) return openDefinition(context, where, find);
  if (typeof context.valueCode === 'string') return newResource(context.valueCode, where);
  const expression = context.valueExpression as Json | undefined;
  if (expression?.language !== 'application/x-fhir-query' || typeof expression.expression !== 'string') {
    throw errors.invalid(`The itemExtractionContext of ${where} must be a valueCode naming a resource type or an application/x-fhir-query valueExpression`, at);
  }
  const query = expression.expression;
  const type = query.split('?')[0];
  const found = await find(query);
  if (found.length > 1) throw errors.invalid(`The itemExtractionContext query "${query}" of ${where} finds ${found.length} resources: it must name at most one`, at);
  if (found.length === 0) return newResource(type, where);
  const existing = structuredClone(found[0]) as Json;
  const replaces = { id: String(existing.id), versionId: String((existing.meta as Json | undefined)?.versionId ?? '') };
  return { base: type, obj: existing, root: existing, model: modelOf(type, where), replaces };
}

/**
 * A new resource of the type a definitionExtract's `definition` names: a core type by its
 * StructureDefinition url, or a profile the project holds (its `type`, and `meta.profile`).
 */
async function openDefinition(context: Json, where: string, find: ContextSearch): Promise<Opened> {
  const canonical = listOf(context.extension).find((part) => part.url === 'definition')?.valueCanonical;
  if (typeof canonical !== 'string') throw errors.invalid(`The definitionExtract of ${where} needs a definition (valueCanonical)`, 'Questionnaire.extension');
  const url = canonical.split('|')[0];
  if (url.startsWith(CORE_DEFINITION) && isResourceType(url.slice(CORE_DEFINITION.length))) return newResource(url.slice(CORE_DEFINITION.length), where);
  const [profile] = await find(`StructureDefinition?url=${encodeURIComponent(url)}`);
  if (typeof profile?.type !== 'string') throw errors.invalid(`The definitionExtract of ${where} names ${canonical}, which is no core resource type nor a profile this project holds`, 'Questionnaire.extension');
  const opened = newResource(profile.type, where);
  opened.root.meta = { profile: [canonical] };
  return opened;
}

function newResource(type: string, where: string): Opened {
  const root: Json = { resourceType: type };
  return { base: type, obj: root, root, model: modelOf(type, where) };
}

function modelOf(type: string, where: string): TypeModel {
  const model = isResourceType(type) ? getTypeModel(type) : undefined;
  if (!model) throw errors.invalid(`The itemExtractionContext of ${where} names "${type}", which is not a resource type`, 'Questionnaire.extension');
  return model;
}

/** The element path below `base` that a definition (`<profile url>#Patient.name.given`) names, without slice names. */
function relativePath(definition: unknown, base: string): string | undefined {
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
  return { base: target.base, obj, model };
}

/** A new element at `path` (a new item of a repeating one) for a group item's answers. */
function elementTarget(target: Target, path: string, linkId: string): Target {
  const steps = path.split('.');
  const last = steps.pop()!;
  const parent = descend(target, steps, linkId);
  const slot = slotOf(parent.model, last, linkId);
  const model = resolveModel(slot.type);
  if (!model) throw unknownElement(linkId, path);
  const child: Json = {};
  if (slot.element.isArray) ((parent.obj[last] ??= []) as Json[]).push(child);
  else parent.obj[last] = child;
  return { base: `${target.base}.${path}`, obj: child, model };
}

function setAnswer(target: Target, path: string, answer: Answer, linkId: string): void {
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

function cannotHold(linkId: string, name: string, answer: Answer) {
  return errors.invalid(`Item "${linkId}": its ${answer.type} answer cannot be written to element "${name}" (definition-based extraction)`, 'QuestionnaireResponse.item');
}

/** Removes the objects and lists that group items opened but no answer filled (FHIR JSON has no empty ones). */
function pruneEmpty(value: Json): void {
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

/**
 * A new resource about the response's subject that does not name it gets it: `subject`, or
 * `patient` when the subject is a Patient (a Condition needs one to be stored).
 */
function fillSubject(opened: Opened, response: Resource): void {
  const subject = response.subject as Json | undefined;
  if (opened.replaces || typeof subject?.reference !== 'string') return;
  const { root, model } = opened;
  if (model.slots.has('subject') && root.subject === undefined) root.subject = subject;
  else if (model.slots.has('patient') && root.patient === undefined && subject.reference.startsWith('Patient/')) root.patient = subject;
}
