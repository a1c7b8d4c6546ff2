import type { RequestContext } from '../../operations/context.js';
import { toOperationOutcomeError } from '../../fhir/outcome.js';
import { outcomeResponse, textResponse } from '../responses.js';
import type { EntryRouter, FhirResponse } from '../types.js';
import { entryError, readEntry, responseEntryText } from './entries.js';

/**
 * A batch: every entry runs as if sent alone with the caller's token, in order, and answers for
 * itself; one failing entry never affects another (http.html 3.1.0.11.1).
 */
export async function runBatch(router: EntryRouter, ctx: RequestContext, entries: unknown[], prefer: string | undefined): Promise<FhirResponse> {
  const base = ctx.config.fhirBaseUrl;
  const answers: string[] = [];
  for (let index = 0; index < entries.length; index++) {
    answers.push(responseEntryText(await runEntry(router, ctx, entries[index], index, prefer), base));
  }
  return textResponse(`{"resourceType":"Bundle","type":"batch-response","entry":[${answers.join(',')}]}`);
}

async function runEntry(router: EntryRouter, ctx: RequestContext, entry: unknown, index: number, prefer: string | undefined): Promise<FhirResponse> {
  try {
    const { request } = readEntry(entry, index, ctx.config.fhirBaseUrl, prefer);
    if (request.method === 'POST' && request.path === '') throw entryError(index, 'a Bundle cannot be an entry of a batch', 'request.url');
    return await router.handle(request, ctx);
  } catch (error) {
    const failure = toOperationOutcomeError(error);
    return outcomeResponse(failure.outcome, failure.status);
  }
}
