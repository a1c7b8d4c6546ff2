import type { Context } from 'hono';
import type { RequestContext, Services } from '../operations/context.js';
import { historyBundle, offsetLinks } from './bundle.js';
import { allOk, errors } from '../fhir/outcome.js';
import { applySubsetting, parseSummary } from '../fhir/summary.js';
import { type Resource, isRecord } from '../fhir/types.js';
import { parseStored } from '../storage/versions.js';
import { type StoredVersion, type WriteResult } from '../storage/types.js';
import {
  assertJsonAcceptable,
  assertJsonContentType,
  explicitlyAcceptsFhirJson,
  JSON_PATCH_TYPES,
  parseAccept,
  parseIfMatch,
  preferReturn,
} from './negotiation.js';
import { emptyResponse, fhirJson, fhirText, outcomeResponse, versionHeaders } from './responses.js';

export type AppEnv = {
  Variables: {
    ctx: RequestContext;
    services: Services;
    requestId: string;
    /** The handler put X-Request-Id on its response itself. */
    requestIdSent?: boolean;
  };
};
export type HonoContext = Context<AppEnv>;

const DEFAULT_HISTORY_COUNT = 20;
const MAX_HISTORY_COUNT = 1000;

export async function readHandler(c: HonoContext): Promise<Response> {
  const { type, id } = c.req.param() as { type: string; id: string };
  const version = await ctxOf(c).repo.readVersion(type, id);
  return respondWithVersion(c, version);
}

export async function vreadHandler(c: HonoContext): Promise<Response> {
  const { type, id, vid } = c.req.param() as { type: string; id: string; vid: string };
  const version = await ctxOf(c).repo.readHistoryVersion(type, id, vid);
  return respondWithVersion(c, version);
}

export async function createHandler(c: HonoContext): Promise<Response> {
  const type = c.req.param('type') as string;
  const repo = ctxOf(c).repo;
  if (type === 'Binary' && !isJsonContentType(c.req.header('content-type'))) {
    const result = await repo.createBinary(
      c.req.header('content-type') ?? 'application/octet-stream',
      new Uint8Array(await c.req.arrayBuffer()),
      securityContextFrom(c),
    );
    return writeResponse(c, result);
  }
  assertJsonContentType(c.req.header('content-type'));
  const body = await readJsonBody(c);
  return writeResponse(c, await (type === 'Binary' ? createBinaryFromJson(c, body) : repo.createResource(type, body)));
}

export async function updateHandler(c: HonoContext): Promise<Response> {
  const { type, id } = c.req.param() as { type: string; id: string };
  if (type === 'Binary' && !isJsonContentType(c.req.header('content-type'))) {
    const result = await ctxOf(c).repo.updateBinary(
      id,
      c.req.header('content-type') ?? 'application/octet-stream',
      new Uint8Array(await c.req.arrayBuffer()),
      { ifMatch: parseIfMatch(c.req.header('if-match')) },
    );
    return writeResponse(c, result);
  }
  assertJsonContentType(c.req.header('content-type'));
  const body = await readJsonBody(c);
  const result = await ctxOf(c).repo.updateResource(type, id, body, { ifMatch: parseIfMatch(c.req.header('if-match')) });
  return writeResponse(c, result);
}

export async function patchHandler(c: HonoContext): Promise<Response> {
  const { type, id } = c.req.param() as { type: string; id: string };
  assertJsonContentType(c.req.header('content-type') ?? 'application/json-patch+json', JSON_PATCH_TYPES);
  const body = await readJsonBody(c);
  const result = await ctxOf(c).repo.patchResource(type, id, body, { ifMatch: parseIfMatch(c.req.header('if-match')) });
  return writeResponse(c, result);
}

export async function deleteHandler(c: HonoContext): Promise<Response> {
  const { type, id } = c.req.param() as { type: string; id: string };
  await ctxOf(c).repo.deleteResource(type, id, { ifMatch: parseIfMatch(c.req.header('if-match')) });
  return outcomeResponse(allOk(`Deleted ${type}/${id}`), 200);
}

export async function historyHandler(c: HonoContext): Promise<Response> {
  const { type, id } = c.req.param() as { type: string; id?: string };
  const ctx = ctxOf(c);
  assertJsonAcceptable(c.req.query('_format') ?? null, c.req.header('accept') ?? null);
  const query = new URL(c.req.url).searchParams;
  const count = Math.min(intParam(query, '_count', DEFAULT_HISTORY_COUNT, 1), MAX_HISTORY_COUNT);
  const offset = intParam(query, '_offset', 0, 0);
  const since = query.get('_since') ?? undefined;
  if (since !== undefined && Number.isNaN(Date.parse(since))) {
    throw errors.invalid(`_since must be an instant such as 2024-01-31T12:00:00Z, not "${since}"`, '_since');
  }
  const page = await ctx.repo.history(type, id, { count, offset, since });
  const path = id === undefined ? `${type}/_history` : `${type}/${id}/_history`;
  const links = offsetLinks(`${ctx.config.fhirBaseUrl}/${path}`, query, offset, count, page.hasMore);
  return fhirJson(historyBundle(ctx.config.fhirBaseUrl, page.versions, links), 200, {}, isPretty(c));
}

/** Sends a stored version: the stored text as is unless subsetting or Binary bytes are asked for. */
async function respondWithVersion(c: HonoContext, version: StoredVersion): Promise<Response> {
  const headers = versionHeaders(version);
  const ifNoneMatch = c.req.header('if-none-match');
  if (matchesIfNoneMatch(ifNoneMatch, headers.ETag)) return emptyResponse(304, headers);
  if (ifNoneMatch === undefined && notModifiedSince(c.req.header('if-modified-since'), version.lastUpdated)) return emptyResponse(304, headers);
  const accept = c.req.header('accept') ?? null;
  if (version.resourceType === 'Binary') return binaryResponse(c, version, headers);
  assertJsonAcceptable(c.req.query('_format') ?? null, accept);
  const summary = parseSummary(c.req.query('_summary') ?? null);
  const elements = c.req.query('_elements') ?? null;
  if (summary === undefined && elements === null) return fhirText(version.text ?? '', 200, headers, isPretty(c));
  return fhirJson(applySubsetting(parseStored(version), summary, elements), 200, headers, isPretty(c));
}

/** Binary bytes with their content type, or the FHIR JSON form (with base64 data) when asked for it. */
async function binaryResponse(c: HonoContext, version: StoredVersion, headers: Record<string, string>): Promise<Response> {
  const repo = ctxOf(c).repo;
  const data = await repo.readBinaryData(version);
  const resource = parseStored(version);
  const wantsJson = explicitlyAcceptsFhirJson(parseAccept(c.req.header('accept'))) || c.req.query('_format') !== undefined;
  if (wantsJson) {
    assertJsonAcceptable(c.req.query('_format') ?? null, c.req.header('accept') ?? null);
    const withData = data ? { ...resource, data: Buffer.from(data).toString('base64') } : resource;
    return fhirJson(withData, 200, headers, isPretty(c));
  }
  return new Response((data ?? null) as BodyInit | null, {
    status: 200,
    headers: { 'Content-Type': String(resource.contentType ?? 'application/octet-stream'), ...headers },
  });
}

async function createBinaryFromJson(c: HonoContext, body: unknown): Promise<WriteResult> {
  if (!isRecord(body)) return ctxOf(c).repo.createResource('Binary', body);
  const { data, contentType, ...rest } = body;
  if (data !== undefined && (typeof data !== 'string' || !/^[A-Za-z0-9+/\s]*={0,2}$/.test(data))) {
    throw errors.invalid('Binary.data must be base64', 'Binary.data');
  }
  const type = typeof contentType === 'string' ? contentType : '';
  const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : new Uint8Array();
  return ctxOf(c).repo.createBinary(type, bytes, rest as Partial<Resource>);
}

/** `X-Security-Context: Type/id` on a raw Binary upload becomes Binary.securityContext. */
function securityContextFrom(c: HonoContext): Partial<Resource> {
  const header = c.req.header('x-security-context');
  return header ? { securityContext: { reference: header } } : {};
}

function writeResponse(c: HonoContext, result: WriteResult): Response {
  const { resource } = result;
  const meta = resource.meta!;
  const ctx = ctxOf(c);
  const headers = versionHeaders({ versionId: meta.versionId!, lastUpdated: meta.lastUpdated! });
  const status = result.created ? 201 : 200;
  if (result.created) {
    headers.Location = `${ctx.config.fhirBaseUrl}/${resource.resourceType}/${resource.id}/_history/${meta.versionId}`;
  }
  switch (preferReturn(c.req.header('prefer'))) {
    case 'minimal':
      return emptyResponse(status, headers);
    case 'OperationOutcome':
      return outcomeResponse(
        allOk(result.changed ? `${result.created ? 'Created' : 'Updated'} ${resource.resourceType}/${resource.id}` : 'No change'),
        status,
        headers,
      );
    default:
      return fhirText(result.text, status, headers, isPretty(c));
  }
}

/** Reads and parses a JSON body; malformed JSON is the client's error, with the parser's reason. */
async function readJsonBody(c: HonoContext): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw errors.invalid('The request body is empty: send a JSON resource');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw errors.invalid(`The request body is not valid JSON: ${(error as Error).message}`);
  }
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
function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value.replace(/^W\//, '') === bare;
  });
}

function ctxOf(c: HonoContext): RequestContext {
  return c.get('ctx');
}

function isPretty(c: HonoContext): boolean {
  return c.req.query('_pretty') === 'true';
}

function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const type = header.split(';')[0].trim().toLowerCase();
  return type === 'application/fhir+json' || type === 'application/json';
}


function intParam(query: URLSearchParams, name: string, fallback: number, min: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw errors.invalid(`${name} must be an integer >= ${min}, not "${raw}"`, name);
  return value;
}
