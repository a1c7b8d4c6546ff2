import type { RequestContext } from '../../operations/context.js';
import { allOk } from '../../fhir/outcome.js';
import { applySubsetting, parseSummary } from '../../fhir/summary.js';
import { parseStored } from '../../storage/versions.js';
import type { StoredVersion } from '../../storage/types.js';
import { assertJsonAcceptable, assertJsonContentType, explicitlyAcceptsFhirJson, JSON_PATCH_TYPES, parseAccept, parseIfMatch } from '../negotiation.js';
import { isJsonContentType, requiredJsonBody } from '../request-body.js';
import { emptyResponse, outcomeResponse, resourceResponse, textResponse, versionHeaders } from '../responses.js';
import { StreamedBytes, type FhirRequest, type FhirResponse, type RouteParams } from '../types.js';
import { conditionalCreate } from './conditional.js';
import { createFrom, securityContextFrom, writeResponse } from './writes.js';

/** The instance interactions: read, vread, create, update, patch and delete (http.html 3.1.0.2-3.1.0.7). */

// Reads continue with `then`: an async function's promise resolved with respondWithVersion's would add turns of the microtask queue.
export function readHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  return ctx.repo.readVersion(type!, id!).then((version) => respondWithVersion(req, ctx, version));
}

export function vreadHandler(req: FhirRequest, { type, id, vid }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  return ctx.repo.readHistoryVersion(type!, id!, vid!).then((version) => respondWithVersion(req, ctx, version));
}

export async function createHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const contentType = req.header('content-type');
  if (type === 'Binary' && !isJsonContentType(contentType)) {
    const bytes = req.body ? await req.body.bytes() : new Uint8Array();
    return writeResponse(req, ctx, await ctx.repo.createBinary(contentType ?? 'application/octet-stream', bytes, securityContextFrom(req), req.assignedId));
  }
  assertJsonContentType(contentType);
  const body = await requiredJsonBody(req);
  const ifNoneExist = req.header('if-none-exist');
  if (ifNoneExist !== undefined) return conditionalCreate(req, ctx, type!, body, ifNoneExist);
  return writeResponse(req, ctx, await createFrom(req, ctx, type!, body));
}

export async function updateHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const contentType = req.header('content-type');
  const ifMatch = parseIfMatch(req.header('if-match'));
  if (type === 'Binary' && !isJsonContentType(contentType)) {
    const bytes = req.body ? await req.body.bytes() : new Uint8Array();
    return writeResponse(req, ctx, await ctx.repo.updateBinary(id!, contentType ?? 'application/octet-stream', bytes, { ifMatch }, securityContextFrom(req)));
  }
  assertJsonContentType(contentType);
  const body = await requiredJsonBody(req);
  return writeResponse(req, ctx, await ctx.repo.updateResource(type!, id!, body, { ifMatch }));
}

export async function patchHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  assertJsonContentType(req.header('content-type'), JSON_PATCH_TYPES);
  const body = await requiredJsonBody(req);
  return writeResponse(req, ctx, await ctx.repo.patchResource(type!, id!, body, { ifMatch: parseIfMatch(req.header('if-match')) }));
}

export async function deleteHandler(req: FhirRequest, { type, id }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  await ctx.repo.deleteResource(type!, id!, { ifMatch: parseIfMatch(req.header('if-match')) });
  return outcomeResponse(allOk(`Deleted ${type}/${id}`), 200);
}

/**
 * Sends a stored version: the stored text as is unless subsetting or Binary bytes are asked for.
 * Only a Binary's bytes are waited for; every other answer is made at once. Failures are thrown.
 */
export function respondWithVersion(req: FhirRequest, ctx: RequestContext, version: StoredVersion): FhirResponse | Promise<FhirResponse> {
  const headers = versionHeaders(version);
  const ifNoneMatch = req.header('if-none-match');
  if (matchesIfNoneMatch(ifNoneMatch, headers.ETag)) return emptyResponse(304, headers);
  if (ifNoneMatch === undefined && notModifiedSince(req.header('if-modified-since'), version.lastUpdated)) return emptyResponse(304, headers);
  const format = req.query.get('_format');
  if (version.resourceType === 'Binary') return binaryResponse(req, ctx, version, headers);
  assertJsonAcceptable(format, req.header('accept') ?? null);
  const summary = parseSummary(req.query.get('_summary'));
  const elements = req.query.get('_elements');
  if (summary === undefined && elements === null) return textResponse(version.text ?? '', 200, headers);
  return resourceResponse(applySubsetting(parseStored(version), summary, elements), 200, headers);
}

/** Binary bytes with their content type, or the FHIR JSON form (with base64 data) when asked for it. */
async function binaryResponse(req: FhirRequest, ctx: RequestContext, version: StoredVersion, headers: Record<string, string>): Promise<FhirResponse> {
  const resource = parseStored(version);
  const format = req.query.get('_format');
  if (explicitlyAcceptsFhirJson(parseAccept(req.header('accept'))) || format !== null) {
    assertJsonAcceptable(format, req.header('accept') ?? null);
    const data = await ctx.repo.readBinaryData(version);
    return resourceResponse(data ? { ...resource, data: Buffer.from(data).toString('base64') } : resource, 200, headers);
  }
  const stream = await ctx.repo.readBinaryStream(version);
  const contentType = { 'Content-Type': String(resource.contentType ?? 'application/octet-stream'), ...headers };
  return { status: 200, headers: contentType, body: stream ? new StreamedBytes(stream.size, stream.chunks) : new Uint8Array() };
}

/**
 * `If-Modified-Since` (RFC 9110 13.1.3): the version was last modified at or before the date. A
 * value that is not a date, or a date later than the server's clock, is ignored. Last-Modified
 * carries whole seconds, so the version's time is compared at that precision. The caller ignores
 * the header when If-None-Match is present, as the RFC says.
 */
function notModifiedSince(header: string | undefined, lastUpdated: string): boolean {
  if (!header) return false;
  const since = Date.parse(header);
  if (Number.isNaN(since) || since > Date.now()) return false;
  return Math.floor(Date.parse(lastUpdated) / 1000) * 1000 <= since;
}

/** `If-None-Match` naming the current version (weak comparison, RFC 9110 13.1.2) or `*`. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value.replace(/^W\//, '') === bare;
  });
}
