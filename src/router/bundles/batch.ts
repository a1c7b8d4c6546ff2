import type { RequestContext } from '../../operations/context.js';
import { respondWithVersion } from '../handlers/resources.js';
import { errorResponse, textResponse } from '../responses.js';
import type { EntryRouter, FhirResponse } from '../types.js';
import { type BundleEntryRequest, entryError, readEntry, responseEntryText } from './entries.js';

/**
 * A batch: every entry runs as if sent alone with the caller's token, in order, and answers for
 * itself; one failing entry never affects another (http.html 3.1.0.11.1).
 */
export async function runBatch(router: EntryRouter, ctx: RequestContext, entries: unknown[], prefer: string | undefined): Promise<FhirResponse> {
  const base = ctx.config.fhirBaseUrl;
  const requests = entries.map((entry, index) => readBatchEntry(entry, index, base, prefer));
  const answers = await readTogether(router, ctx, requests);
  const texts: string[] = [];
  for (const [index, request] of requests.entries()) {
    const answer = answers.get(index) ?? (request instanceof Error ? errorResponse(request) : await router.handle(request.request, ctx));
    texts.push(responseEntryText(answer, base));
  }
  return textResponse(`{"resourceType":"Bundle","type":"batch-response","entry":[${texts.join(',')}]}`);
}

function readBatchEntry(entry: unknown, index: number, base: string, prefer: string | undefined): BundleEntryRequest | Error {
  try {
    const read = readEntry(entry, index, base, prefer);
    if (read.request.method === 'POST' && read.request.path === '') throw entryError(index, 'a Bundle cannot be an entry of a batch', 'request.url');
    return read;
  } catch (error) {
    return error as Error;
  }
}

/**
 * The plain reads of a batch (`GET [type]/[id]`, no conditional header or parameter) in one
 * statement, with the same access rules as a single read; a read it does not find runs alone,
 * which answers why (404, 410, 403).
 */
async function readTogether(router: EntryRouter, ctx: RequestContext, requests: (BundleEntryRequest | Error)[]): Promise<Map<number, FhirResponse>> {
  const plain = new Map<number, { resourceType: string; id: string; entry: BundleEntryRequest }>();
  for (const [index, entry] of requests.entries()) {
    if (entry instanceof Error) continue;
    const { request } = entry;
    if (request.method !== 'GET' || request.query.size > 0 || request.header('if-none-match') || request.header('if-modified-since')) continue;
    const found = router.match(request.method, request.path);
    const interaction = found?.route.interaction;
    if (!interaction || !('type' in interaction) || interaction.type !== 'read' || found.params.type === 'Binary') continue;
    plain.set(index, { resourceType: found.params.type!, id: found.params.id!, entry });
  }
  const answers = new Map<number, FhirResponse>();
  if (plain.size < 2) return answers;
  const versions = await ctx.repo.readVersions([...plain.values()]);
  for (const [index, key] of plain) {
    const version = versions.get(`${key.resourceType}/${key.id}`);
    if (version) answers.set(index, await respondWithVersion(key.entry.request, ctx, version));
  }
  return answers;
}
