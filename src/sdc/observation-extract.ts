import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { answerValue, observationValue } from './answers.js';
import { extensionOf, listOf, SDC, type IndexedItem, type Json } from './questionnaire.js';

/**
 * Observation-based extraction (SDC "Form Data Extraction", observation-based): every answer to an
 * item that has a `code` and is marked for extraction becomes one Observation with that code, the
 * response's subject, encounter, author and authored time, and the answer as its value.
 *
 * An item is marked by `sdc-questionnaire-observationExtract` (true) on itself or, inherited, on
 * an item it sits in or on the Questionnaire; the nearest one decides, so `false` turns a branch
 * off. `sdc-questionnaire-observationLinkPeriod` on an item marks it too (SDC's earlier releases
 * linked an item to Observations, for population and extraction alike, by that extension).
 * `sdc-questionnaire-observation-extract-category` sets the category, found the same way.
 */

const EXTRACT = `${SDC}sdc-questionnaire-observationExtract`;
const LINK_PERIOD = `${SDC}sdc-questionnaire-observationLinkPeriod`;
const CATEGORY = `${SDC}sdc-questionnaire-observation-extract-category`;

/** The Observations one answered item yields (none when it is not marked, has no code or no answer). */
export function observationsOf(response: Resource, questionnaire: Resource, answered: Json, question: IndexedItem): Resource[] {
  const { item } = question;
  const codings = listOf(item.code);
  if (codings.length === 0 || !marked(questionnaire, question)) return [];
  const category = nearest(questionnaire, question, (element) => {
    const found = listOf(element.extension).filter((extension) => extension.url === CATEGORY).map((extension) => extension.valueCodeableConcept);
    return found.length > 0 ? found : undefined;
  });
  return listOf(answered.answer).flatMap((answer) => {
    const value = answerValue(answer);
    if (!value) return [];
    const observed = observationValue(value);
    if (!observed) {
      throw errors.invalid(
        `Item "${String(item.linkId)}" is marked for observation extraction, but an Observation cannot hold its ${value.type} answer`,
        'QuestionnaireResponse.item',
      );
    }
    return [observation(response, codings, category, observed)];
  });
}

function observation(response: Resource, codings: Json[], category: unknown[] | undefined, [key, value]: [string, unknown]): Resource {
  const derivedFrom = typeof response.id === 'string' ? [{ reference: `QuestionnaireResponse/${response.id}` }] : undefined;
  // Observation.performer names no Device, which a response's author may be.
  const author = response.author as Json | undefined;
  const performer = author && !String(author.reference ?? '').startsWith('Device/') ? [author] : undefined;
  return Object.fromEntries(
    Object.entries({
      resourceType: 'Observation',
      status: 'final',
      category,
      code: { coding: codings },
      subject: response.subject,
      encounter: response.encounter,
      effectiveDateTime: response.authored,
      issued: typeof response.authored === 'string' && response.authored.length > 10 ? response.authored : undefined,
      performer,
      [key]: value,
      derivedFrom,
    }).filter(([, v]) => v !== undefined),
  ) as Resource;
}

function marked(questionnaire: Resource, question: IndexedItem): boolean {
  return (
    nearest(questionnaire, question, (element) => {
      const extension = extensionOf(element, EXTRACT);
      if (typeof extension?.valueBoolean === 'boolean') return extension.valueBoolean;
      return element === question.item && extensionOf(element, LINK_PERIOD) ? true : undefined;
    }) ?? false
  );
}

/** The first answer `read` gives on the item, then on the items it sits in, then on the Questionnaire. */
function nearest<T>(questionnaire: Resource, question: IndexedItem, read: (element: Json) => T | undefined): T | undefined {
  for (const element of [question.item, ...question.ancestors, questionnaire as Json]) {
    const found = read(element);
    if (found !== undefined) return found;
  }
  return undefined;
}
