import { randomUUID } from 'node:crypto';
import { errors } from '../fhir/outcome.js';
import type { Bundle, BundleEntry, Resource } from '../fhir/types.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { RequestContext } from '../operations/context.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { search, searchServicesFor } from '../search/service.js';
import { definitionExtract, type Extracted } from './definition-extract.js';
import { observationsOf } from './observation-extract.js';
import { indexItems, listOf, questionnaireFor, type IndexedItem, type Json } from './questionnaire.js';
import { hasTemplates, templateEntries } from './template-extract.js';

/**
 * `$extract` (SDC, http://hl7.org/fhir/uv/sdc/OperationDefinition/QuestionnaireResponse-extract):
 * the resources a QuestionnaireResponse's answers make, as a transaction Bundle the client posts
 * to the base URL. Observation-based, definition-based and template-based extraction (the last by
 * a library, template-extract.ts); nothing is written here.
 *
 * `QuestionnaireResponse/$extract` takes the response in the body (the `questionnaire-response`
 * parameter, or the bare resource as MedplumClient posts it); `QuestionnaireResponse/{id}/$extract`
 * extracts a stored one. SPEC 4.9 names it `Questionnaire/$extract`: that route takes the response
 * the same way, and `Questionnaire/{id}/$extract` extracts with that Questionnaire.
 */

interface ExtractInput {
  'questionnaire-response'?: Resource;
  questionnaire?: Resource;
}

export const extractOperation: Operation<ExtractInput, { return: Resource }> = {
  definition: ownOperationDefinition('extract.json'),
  bareResourceParameter: 'questionnaire-response',
  async handler(input, request) {
    const { ctx } = request;
    const response = await responseOf(input, request);
    const given = input.questionnaire ?? (request.resourceType === 'Questionnaire' && request.id ? await ctx.repo.readResource('Questionnaire', request.id) : undefined);
    const questionnaire = await questionnaireFor(ctx, response, given);
    return { return: await extract(ctx, response, questionnaire) };
  },
};

async function responseOf(input: ExtractInput, { ctx, resourceType, id }: OperationRequest): Promise<Resource> {
  if (resourceType === 'QuestionnaireResponse' && id) {
    if (input['questionnaire-response']) throw errors.invalid('Give the QuestionnaireResponse either in the URL or in the body, not both', 'Parameters.parameter');
    return ctx.repo.readResource('QuestionnaireResponse', id);
  }
  const response = input['questionnaire-response'];
  if (!response) {
    throw errors.invalid('$extract needs a QuestionnaireResponse: the questionnaire-response parameter, or the resource as the body', 'Parameters.parameter');
  }
  return response;
}

/** The transaction Bundle of what the response's answers make. */
export async function extract(ctx: RequestContext, response: Resource, questionnaire: Resource): Promise<Bundle> {
  const index = indexItems(questionnaire);
  const observations: Resource[] = [];
  const visit = (items: unknown) => {
    for (const answered of listOf(items)) {
      const question: IndexedItem | undefined = typeof answered.linkId === 'string' ? index.get(answered.linkId) : undefined;
      if (question) observations.push(...observationsOf(response, questionnaire, answered, question));
      visit(answered.item);
      for (const answer of listOf(answered.answer)) visit(answer.item);
    }
  };
  visit(response.item);
  const defined = await definitionExtract(response, questionnaire, index, (query) => findForContext(ctx, query));
  const entries = [...defined, ...observations.map((resource): Extracted => ({ resource }))].map(transactionEntry);
  if (hasTemplates(questionnaire)) entries.push(...(await templateEntries(response, questionnaire)));
  return { resourceType: 'Bundle', type: 'transaction', ...(entries.length > 0 ? { entry: entries } : {}) };
}

/**
 * A stored resource a context found is updated if unchanged since it was read. Otherwise, as SDC
 * says: a resource whose answers or values set an `id` is `PUT` at that id, one without is
 * created (`POST`); the fullUrl is a new `urn:uuid` unless the definitionExtract gives one, and its
 * conditions are the request's.
 */
function transactionEntry({ resource, replaces, entry }: Extracted): BundleEntry {
  if (replaces) {
    const { meta: _meta, ...content } = resource;
    return {
      fullUrl: `urn:uuid:${randomUUID()}`,
      resource: content,
      request: { method: 'PUT', url: `${resource.resourceType}/${replaces.id}`, ...(replaces.versionId ? { ifMatch: `W/"${replaces.versionId}"` } : {}) },
    };
  }
  const { fullUrl = `urn:uuid:${randomUUID()}`, ...conditions } = entry ?? {};
  if (typeof resource.id === 'string') return { fullUrl, resource, request: { method: 'PUT', url: `${resource.resourceType}/${resource.id}`, ...conditions } };
  return { fullUrl, resource, request: { method: 'POST', url: resource.resourceType, ...conditions } };
}

/** The stored resources an itemExtractionContext query (`Patient?identifier=x`) names, in the caller's project. */
async function findForContext(ctx: RequestContext, query: string): Promise<Resource[]> {
  const [type, text = ''] = query.split('?');
  if (!type) throw errors.invalid(`The itemExtractionContext query "${query}" names no resource type`, 'Questionnaire.extension');
  const result = await search(searchServicesFor(ctx), type, [...new URLSearchParams(text).entries(), ['_count', '2']]);
  return result.matches.map((row) => JSON.parse(row.text) as Json as Resource);
}
