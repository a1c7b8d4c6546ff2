import { STATUS_CODES } from 'node:http';
import { errors, OperationOutcomeError, toOperationOutcomeError } from '../../fhir/outcome.js';
import { isRecord, type Resource } from '../../fhir/types.js';
import { utf8Text, valueBody } from '../request-body.js';
import { StreamedBytes, type FhirMethod, type FhirRequest, type FhirResponse } from '../types.js';

/** One entry of a batch or transaction, checked and turned into a router request. */
export interface BundleEntryRequest {
  index: number;
  fullUrl?: string;
  request: FhirRequest;
  /** The resource the entry sends (POST, PUT), which a transaction may rewrite before it runs. */
  resource?: Resource;
}

const METHODS = new Set<FhirMethod>(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);
const JSON_PATCH = 'application/json-patch+json';

/** The entry's place in the Bundle, as OperationOutcome.issue.expression names it. */
export function entryPath(index: number, field?: string): string {
  return `Bundle.entry[${index}]${field ? `.${field}` : ''}`;
}

/** Fails with 400 naming the entry and the field at fault. */
export function entryError(index: number, text: string, field?: string): OperationOutcomeError {
  return errors.invalid(`Bundle.entry[${index}]: ${text}`, entryPath(index, field));
}

/**
 * Reads an entry's `request` as a router request: the URL relative to the FHIR base (an absolute
 * URL on this server is accepted), the conditional headers from `ifMatch`, `ifNoneMatch`,
 * `ifNoneExist` and `ifModifiedSince`, and the body from `resource` (a PATCH sends its JSON
 * Patch as a Binary, as FHIR R4 has no other way to carry it).
 */
export function readEntry(entry: unknown, index: number, fhirBase: string, prefer: string | undefined): BundleEntryRequest {
  if (!isRecord(entry)) throw entryError(index, 'an entry must be an object');
  const request = entry.request;
  if (!isRecord(request)) throw entryError(index, 'the entry has no request', 'request');
  const method = request.method;
  if (typeof method !== 'string' || !METHODS.has(method as FhirMethod)) {
    throw entryError(index, `request.method must be one of ${[...METHODS].join(', ')}, not ${JSON.stringify(method)}`, 'request.method');
  }
  if (typeof request.url !== 'string' || request.url.trim() === '') throw entryError(index, 'request.url is missing', 'request.url');
  const { path, query } = splitUrl(request.url.trim(), fhirBase);
  const resource = entry.resource;
  if (resource !== undefined && !isRecord(resource)) throw entryError(index, 'resource must be a JSON object', 'resource');
  const headers: Record<string, string | undefined> = {
    'if-match': stringField(request, 'ifMatch', index),
    'if-none-match': stringField(request, 'ifNoneMatch', index),
    'if-none-exist': stringField(request, 'ifNoneExist', index),
    'if-modified-since': stringField(request, 'ifModifiedSince', index),
    prefer,
  };
  let body: unknown = resource;
  if (method === 'PATCH') {
    body = patchBody(resource as Resource | undefined, index);
    headers['content-type'] = JSON_PATCH;
  } else if (resource !== undefined) headers['content-type'] = 'application/fhir+json';
  const fullUrl = typeof entry.fullUrl === 'string' ? entry.fullUrl : undefined;
  return {
    index,
    fullUrl,
    resource: method === 'PATCH' ? undefined : (resource as Resource | undefined),
    request: {
      method: method as FhirMethod,
      path,
      query,
      header: (name) => headers[name],
      body: body === undefined ? undefined : valueBody(body),
    },
  };
}

/** The entry's request with its body replaced (a transaction's rewritten references). */
export function withResource(entry: BundleEntryRequest, resource: Resource): BundleEntryRequest {
  return { ...entry, resource, request: { ...entry.request, body: valueBody(resource) } };
}

function splitUrl(url: string, fhirBase: string): { path: string; query: URLSearchParams } {
  const relative = url.startsWith(`${fhirBase}/`) ? url.slice(fhirBase.length + 1) : url === fhirBase ? '' : url.replace(/^\//, '');
  const queryStart = relative.indexOf('?');
  if (queryStart < 0) return { path: relative, query: new URLSearchParams() };
  return { path: relative.slice(0, queryStart), query: new URLSearchParams(relative.slice(queryStart + 1)) };
}

function stringField(request: Record<string, unknown>, name: string, index: number): string | undefined {
  const value = request[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw entryError(index, `request.${name} must be a string`, `request.${name}`);
  return value;
}

/** A JSON Patch travels as a Binary of `application/json-patch+json` with base64 `data`. */
function patchBody(resource: Resource | undefined, index: number): unknown {
  if (resource?.resourceType !== 'Binary' || typeof resource.data !== 'string') {
    throw entryError(index, `a PATCH entry sends its JSON Patch as a Binary resource with contentType ${JSON_PATCH} and base64 data`, 'resource');
  }
  if (resource.contentType !== JSON_PATCH) {
    throw entryError(index, `the patch Binary's contentType must be ${JSON_PATCH}, not ${JSON.stringify(resource.contentType)}`, 'resource.contentType');
  }
  try {
    return JSON.parse(utf8Text(Buffer.from(resource.data, 'base64'))) as unknown;
  } catch {
    throw entryError(index, 'the patch Binary does not hold base64 UTF-8 JSON', 'resource.data');
  }
}

/**
 * An entry of a batch-response or transaction-response Bundle as JSON text: a stored resource is
 * spliced in as stored. `lastModified` is the version's instant (the header has whole seconds).
 */
export function responseEntryText(response: FhirResponse, fhirBase: string): string {
  const resource = bodyText(response);
  const parsed = resource !== undefined && typeof response.body !== 'string' ? (response.body as Resource) : undefined;
  const head: Record<string, unknown> = { status: statusLine(response.status) };
  const location = response.headers.Location ?? response.headers['Content-Location'];
  if (location) head.location = location;
  if (response.headers.ETag) head.etag = response.headers.ETag;
  const lastUpdated = lastUpdatedOf(response, parsed);
  if (lastUpdated) head.lastModified = lastUpdated;
  const isOutcome = response.status >= 400 || (parsed?.resourceType === 'OperationOutcome' && response.status !== 200);
  const parts: string[] = [];
  const id = resourceKey(response, parsed);
  if (id && !isOutcome) parts.push(`"fullUrl":${JSON.stringify(`${fhirBase}/${id}`)}`);
  if (resource !== undefined && !isOutcome) parts.push(`"resource":${resource}`);
  const responseText = JSON.stringify(head);
  parts.push(`"response":${isOutcome && resource !== undefined ? `${responseText.slice(0, -1)},"outcome":${resource}}` : responseText}`);
  return `{${parts.join(',')}}`;
}

function bodyText(response: FhirResponse): string | undefined {
  const body = response.body;
  if (body === undefined) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array || body instanceof StreamedBytes) return undefined;
  return JSON.stringify(body);
}

function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? ''}`.trim();
}

/** Stored versions start with their type, id and meta (storage stamps them first). */
const STORED_HEAD = /^\{"resourceType":"([A-Za-z]+)","id":"([A-Za-z0-9\-.]{1,64})"/;

function lastUpdatedOf(response: FhirResponse, parsed: Resource | undefined): string | undefined {
  const fromMeta = parsed?.meta?.lastUpdated;
  if (fromMeta) return fromMeta;
  const text = typeof response.body === 'string' ? /"lastUpdated":"([^"]+)"/.exec(response.body.slice(0, 400))?.[1] : undefined;
  if (text) return text;
  const header = response.headers['Last-Modified'];
  return header ? new Date(header).toISOString() : undefined;
}

function resourceKey(response: FhirResponse, parsed: Resource | undefined): string | undefined {
  if (parsed?.id) return `${parsed.resourceType}/${parsed.id}`;
  const stored = typeof response.body === 'string' ? STORED_HEAD.exec(response.body) : null;
  if (stored) return `${stored[1]}/${stored[2]}`;
  const location = response.headers.Location;
  const match = location ? /([A-Z][A-Za-z]+\/[A-Za-z0-9\-.]{1,64})\/_history\//.exec(location) : null;
  return match?.[1];
}

/** The entry's failure, with its status, naming the entry in the text and the expression. */
export function failedEntry(index: number, error: unknown): unknown {
  const failure = toOperationOutcomeError(error);
  if (failure.status >= 500) return error;
  const issue = failure.outcome.issue.map((item) => ({
    ...item,
    details: { text: `${entryPath(index)}: ${item.details?.text ?? item.diagnostics ?? item.code}` },
    expression: [entryPath(index), ...(item.expression ?? [])],
  }));
  return new OperationOutcomeError({ ...failure.outcome, issue }, failure.status, failure.headers);
}
