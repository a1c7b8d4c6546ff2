import type { OperationOutcome, Resource } from '../fhir/types.js';
import { FHIR_JSON } from '../router/negotiation.js';

export const FHIR_CONTENT_TYPE = `${FHIR_JSON}; charset=utf-8`;

export function fhirJson(resource: Resource, status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(resource), { status, headers: { 'Content-Type': FHIR_CONTENT_TYPE, ...headers } });
}

export function outcomeResponse(body: OperationOutcome, status: number, headers: Record<string, string> = {}): Response {
  return fhirJson(body, status, headers);
}
