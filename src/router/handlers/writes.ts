import type { RequestContext } from '../../operations/context.js';
import { allOk, errors } from '../../fhir/outcome.js';
import { type Resource, isRecord } from '../../fhir/types.js';
import { TYPE_AND_ID } from '../../fhir/ids.js';
import { isResourceType } from '../../fhir/definitions.js';
import type { WriteResult } from '../../storage/types.js';
import { preferReturn } from '../negotiation.js';
import { emptyResponse, outcomeResponse, textResponse, versionHeaders } from '../responses.js';
import type { FhirRequest, FhirResponse } from '../types.js';

/** Creates and the answers to every write, shared by the plain and the conditional interactions. */

/** The create itself, once any condition has been checked. */
export function createFrom(req: FhirRequest, ctx: RequestContext, type: string, body: unknown): Promise<WriteResult> {
  return type === 'Binary' ? createBinaryFromJson(ctx, body, req.assignedId) : ctx.repo.createResource(type, body, req.assignedId);
}

async function createBinaryFromJson(ctx: RequestContext, body: unknown, id: string | undefined): Promise<WriteResult> {
  if (!isRecord(body)) return ctx.repo.createResource('Binary', body, id);
  const { data, contentType, ...rest } = body;
  if (data !== undefined && (typeof data !== 'string' || !/^[A-Za-z0-9+/\s]*={0,2}$/.test(data))) {
    throw errors.invalid('Binary.data must be base64', 'Binary.data');
  }
  const type = typeof contentType === 'string' ? contentType : '';
  const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : new Uint8Array();
  return ctx.repo.createBinary(type, bytes, rest as Partial<Resource>, id);
}

/**
 * `X-Security-Context: Type/id` on a raw Binary upload (create or update) becomes
 * Binary.securityContext, as Medplum takes it; anything but a reference to a resource type is 400,
 * since it decides which patient's compartment the Binary is in.
 */
export function securityContextFrom(req: FhirRequest): Partial<Resource> {
  const header = req.header('x-security-context')?.trim();
  if (header === undefined || header === '') return {};
  const type = TYPE_AND_ID.exec(header)?.[1];
  if (type === undefined || !isResourceType(type)) {
    throw errors.invalid(`X-Security-Context must be a reference such as Patient/123, not "${header}"`, 'Binary.securityContext');
  }
  return { securityContext: { reference: header } };
}

/** The answer to a write: 201 with Location for a creation, the body as `Prefer: return` asks. */
export function writeResponse(req: FhirRequest, ctx: RequestContext, result: WriteResult): FhirResponse {
  const { resource } = result;
  const meta = resource.meta!;
  const headers = versionHeaders({ versionId: meta.versionId!, lastUpdated: meta.lastUpdated! });
  const status = result.created ? 201 : 200;
  if (result.created) {
    headers.Location = `${ctx.config.fhirBaseUrl}/${resource.resourceType}/${resource.id}/_history/${meta.versionId}`;
  }
  switch (preferReturn(req.header('prefer'))) {
    case 'minimal':
      return emptyResponse(status, headers);
    case 'OperationOutcome':
      return outcomeResponse(
        allOk(result.changed ? `${result.created ? 'Created' : 'Updated'} ${resource.resourceType}/${resource.id}` : 'No change'),
        status,
        headers,
      );
    default:
      return textResponse(result.text, status, headers);
  }
}
