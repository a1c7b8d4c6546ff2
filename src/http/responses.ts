import type { OperationOutcome, Resource } from '../fhir/types.js';
import { FHIR_JSON } from './negotiation.js';

const FHIR_CONTENT_TYPE = `${FHIR_JSON}; charset=utf-8`;

export interface VersionHeaders {
  versionId: string;
  lastUpdated: string;
}

/** ETag and Last-Modified of a version (FHIR http 3.1.0.4). */
export function versionHeaders(version: VersionHeaders): Record<string, string> {
  return {
    ETag: `W/"${version.versionId}"`,
    'Last-Modified': new Date(version.lastUpdated).toUTCString(),
  };
}

/** A FHIR JSON response from already-serialised text; `_pretty=true` re-indents it. */
export function fhirText(text: string, status: number, headers: Record<string, string> = {}, pretty = false): Response {
  const body = pretty ? JSON.stringify(JSON.parse(text), null, 2) : text;
  return new Response(body, { status, headers: { 'Content-Type': FHIR_CONTENT_TYPE, ...headers } });
}

export function fhirJson(resource: Resource, status: number, headers: Record<string, string> = {}, pretty = false): Response {
  return new Response(JSON.stringify(resource, null, pretty ? 2 : undefined), {
    status,
    headers: { 'Content-Type': FHIR_CONTENT_TYPE, ...headers },
  });
}

export function outcomeResponse(body: OperationOutcome, status: number, headers: Record<string, string> = {}): Response {
  return fhirJson(body, status, headers);
}

export function emptyResponse(status: number, headers: Record<string, string> = {}): Response {
  return new Response(null, { status, headers });
}
