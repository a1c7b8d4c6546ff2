import { toOperationOutcomeError } from '../fhir/outcome.js';
import type { OperationOutcome, Resource } from '../fhir/types.js';
import { httpDate } from './http-date.js';
import { StreamedBytes, type FhirResponse } from './types.js';

export interface VersionHeaders {
  versionId: string;
  lastUpdated: string;
}

/** ETag and Last-Modified of a version (FHIR http 3.1.0.4). */
export function versionHeaders(version: VersionHeaders): Record<string, string> {
  return {
    ETag: `W/"${version.versionId}"`,
    'Last-Modified': httpDate(version.lastUpdated),
  };
}

/** An answer whose body is FHIR JSON text already serialised (a stored version, a spliced Bundle). */
export function textResponse(text: string, status = 200, headers: Record<string, string> = {}): FhirResponse {
  return { status, headers, body: text };
}

export function resourceResponse(resource: Resource, status = 200, headers: Record<string, string> = {}): FhirResponse {
  return { status, headers, body: resource };
}

export function outcomeResponse(outcome: OperationOutcome, status: number, headers: Record<string, string> = {}): FhirResponse {
  return { status, headers, body: outcome };
}

/** A failure as its answer: the OperationOutcome with its status and headers. */
export function errorResponse(error: unknown): FhirResponse {
  const failure = toOperationOutcomeError(error);
  return outcomeResponse(failure.outcome, failure.status, failure.headers);
}

export function emptyResponse(status: number, headers: Record<string, string> = {}): FhirResponse {
  return { status, headers };
}

/** The answer's body as a resource (a Bundle entry's `resource`, a GraphQL mutation's result). */
export function bodyResource(response: FhirResponse): Resource | undefined {
  const body = response.body;
  if (body === undefined || body instanceof Uint8Array || body instanceof StreamedBytes) return undefined;
  return typeof body === 'string' ? (JSON.parse(body) as Resource) : body;
}
