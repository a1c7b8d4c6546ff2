import type { Resource } from '../fhir/types.js';
import { answerValue } from './answers.js';
import { elementTarget, pathIn, pruneEmpty, setAnswer, type Target } from './element-paths.js';
import { entryRequestOf, type EntryRequest } from './entry-request.js';
import { CONTEXT, DEFINITION_EXTRACT, openContext, type ContextScope, type ContextSearch, type Opened } from './extract-context.js';
import { hasExtractValues, writeExtractValues } from './extract-values.js';
import { copyProfileValues } from './profile-values.js';
import { withAllocatedIds, type Variables } from './expressions.js';
import { extensionOf, listOf, type IndexedItem, type Json } from './questionnaire.js';

export type { ContextSearch } from './extract-context.js';

/**
 * Definition-based extraction (SDC "Form Data Extraction", definition-based): an
 * `sdc-questionnaire-itemExtractionContext` (or SDC 4's `definitionExtract`) on the Questionnaire
 * or on a group item opens a resource (one per repetition of the group, extract-context.ts); the
 * answers of the items below it whose `definition` names an element of that resource
 * (`http://hl7.org/fhir/StructureDefinition/Patient#Patient.name.given`) are written into it,
 * converted to the element's type, and so are the items' `definitionExtractValue`s
 * (extract-values.ts). A group item with a definition (`Patient.name`) opens one element per
 * repetition for the items below it. `extractAllocateId` variables (expressions.ts) are
 * allocated per repetition of the item that declares them, before its context opens.
 */

/** The extensions that open resources on an item or the Questionnaire: an itemExtractionContext, else every definitionExtract (one resource each). */
function contextsOf(element: Json): Json[] {
  const legacy = extensionOf(element, CONTEXT);
  return legacy ? [legacy] : listOf(element.extension).filter((extension) => extension.url === DEFINITION_EXTRACT);
}

/** A resource the extraction made, and the version it replaces when it updates a stored one. */
export interface Extracted {
  readonly resource: Resource;
  readonly replaces?: { readonly id: string; readonly versionId: string };
  /** Set by a definitionExtract's expressions. */
  readonly entry?: EntryRequest;
}

export async function definitionExtract(
  response: Resource,
  questionnaire: Resource,
  index: ReadonlyMap<string, IndexedItem>,
  find: ContextSearch,
): Promise<Extracted[]> {
  const walker = new DefinitionWalker(response, index, find);
  const root = questionnaire as Json;
  const variables = withAllocatedIds(root, {});
  const rootContexts = contextsOf(root);
  const at: ContextScope = { scope: response as Json, response, variables };
  const shared = rootContexts.length > 1;
  for (const context of rootContexts) {
    await walker.inContext(context, 'the Questionnaire', at, async (opened) => {
      if (opened) writeExtractValues(root, response as Json, response, variables, opened, shared);
      await walker.walk(response.item, opened, variables);
    });
  }
  if (rootContexts.length === 0) await walker.walk(response.item, undefined, variables);
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

  async walk(items: unknown, target: Target | undefined, variables: Variables): Promise<void> {
    for (const answered of listOf(items)) {
      const linkId = String(answered.linkId);
      const question = typeof answered.linkId === 'string' ? this.index.get(answered.linkId) : undefined;
      if (!question) {
        await this.walkChildren(answered, target, variables);
        continue;
      }
      // Each repetition of the item in the response allocates its own ids.
      const own = withAllocatedIds(question.item, variables);
      const contexts = contextsOf(question.item);
      const path = target ? pathIn(question.item.definition, target) : undefined;
      const at: ContextScope = { scope: answered, response: this.response, variables: own };
      if (contexts.length > 0) {
        // Several definitionExtracts: a resource each, every one walked over the item's answers.
        for (const context of contexts) {
          await this.inContext(context, `item "${linkId}"`, at, async (opened) => {
            this.extractValues(question, answered, own, opened, contexts.length > 1);
            await this.walkChildren(answered, opened, own);
          });
        }
      } else if (target && path && question.item.type === 'group') {
        const element = elementTarget(target, path, linkId);
        this.extractValues(question, answered, own, element);
        await this.walk(answered.item, element, own);
      } else if (target && path) {
        await this.writeAnswers(answered, target, path, linkId, own);
        this.extractValues(question, answered, own, target);
      } else {
        this.extractValues(question, answered, own, target);
        await this.walkChildren(answered, target, own);
      }
    }
  }

  /** Opens the context's resource, walks within it, and keeps the resource when something was written to it. */
  async inContext(context: Json, where: string, at: ContextScope, within: (opened: Opened | undefined) => Promise<void>): Promise<void> {
    const opened = await openContext(context, where, this.find, at);
    if (!opened) return within(undefined);
    const entry = context.url === DEFINITION_EXTRACT ? entryRequestOf(context, at.scope, this.response, at.variables) : undefined;
    await within(opened);
    pruneEmpty(opened.root);
    const { resourceType: _type, meta: _meta, ...content } = opened.root;
    if (Object.keys(content).length === 0 && !opened.replaces) return;
    if (opened.profile) copyProfileValues(opened.root, opened.profile);
    fillSubject(opened, this.response);
    this.made.push({ resource: opened.root as Resource, replaces: opened.replaces, entry });
  }

  /** The item's definitionExtractValues, when the response holds the item (a group, or a question with an answer). */
  private extractValues(question: IndexedItem, answered: Json, variables: Variables, target: Target | undefined, shared = false): void {
    if (!target || !hasExtractValues(question.item)) return;
    if (question.item.type !== 'group' && listOf(answered.answer).length === 0) return;
    writeExtractValues(question.item, answered, this.response, variables, target, shared);
  }

  private async writeAnswers(answered: Json, target: Target, path: string, linkId: string, variables: Variables): Promise<void> {
    for (const answer of listOf(answered.answer)) {
      const value = answerValue(answer);
      if (value) setAnswer(target, path, value, linkId);
      await this.walk(answer.item, target, variables);
    }
  }

  private async walkChildren(answered: Json, target: Target | undefined, variables: Variables): Promise<void> {
    await this.walk(answered.item, target, variables);
    for (const answer of listOf(answered.answer)) await this.walk(answer.item, target, variables);
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
