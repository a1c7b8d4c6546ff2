import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import { search, searchServicesFor } from '../search/service.js';

/**
 * The Questionnaire a QuestionnaireResponse answers, and its items by linkId, as SDC extraction
 * reads them (http://hl7.org/fhir/uv/sdc/extraction.html).
 */

export type Json = Record<string, unknown>;

export const SDC = 'http://hl7.org/fhir/uv/sdc/StructureDefinition/';

/** A Questionnaire item with the items it sits in, nearest first (what inherited extensions are read from). */
export interface IndexedItem {
  readonly item: Json;
  readonly ancestors: readonly Json[];
}

/** Every item of a Questionnaire by linkId (linkIds are unique in a Questionnaire: que-2). */
export function indexItems(questionnaire: Resource): Map<string, IndexedItem> {
  const index = new Map<string, IndexedItem>();
  const visit = (items: unknown, ancestors: Json[]) => {
    for (const item of listOf(items)) {
      if (typeof item.linkId === 'string') index.set(item.linkId, { item, ancestors });
      visit(item.item, [item, ...ancestors]);
    }
  };
  visit(questionnaire.item, []);
  return index;
}

/** The records of a JSON list (anything else: none). */
export function listOf(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

/** The extension `url` of an element, if it has one. */
export function extensionOf(element: Json, url: string): Json | undefined {
  return listOf(element.extension).find((extension) => extension.url === url);
}

/**
 * The Questionnaire to extract with: the one given, else the response's `questionnaire` canonical
 * (`url` or `url|version`) found in the caller's project (the newest when several versions match),
 * or a contained one (`#id`). Missing or unknown: 400 naming it.
 */
export async function questionnaireFor(ctx: RequestContext, response: Resource, given?: Resource): Promise<Resource> {
  if (given) return given;
  const canonical = response.questionnaire;
  if (typeof canonical !== 'string' || canonical === '') {
    throw errors.invalid('The QuestionnaireResponse names no questionnaire: set QuestionnaireResponse.questionnaire, or give the questionnaire parameter', 'QuestionnaireResponse.questionnaire');
  }
  if (canonical.startsWith('#')) {
    const contained = listOf(response.contained).find((r) => r.resourceType === 'Questionnaire' && `#${String(r.id)}` === canonical);
    if (contained) return contained as Resource;
    throw errors.invalid(`The QuestionnaireResponse contains no Questionnaire ${canonical}`, 'QuestionnaireResponse.questionnaire');
  }
  const [url, version] = canonical.split('|');
  const params: [string, string][] = [['url', url], ['_sort', '-_lastUpdated'], ['_count', '1']];
  if (version) params.push(['version', version]);
  const result = await search(searchServicesFor(ctx), 'Questionnaire', params);
  const row = result.matches[0];
  if (!row) throw errors.invalid(`No Questionnaire ${canonical} in this project: store it first, or give the questionnaire parameter`, 'QuestionnaireResponse.questionnaire');
  return JSON.parse(row.text) as Resource;
}
