import type { RequestContext } from '../../operations/context.js';
import { allOk, errors, OperationOutcomeError } from '../../fhir/outcome.js';
import { isRecord } from '../../fhir/types.js';
import type { SearchRow } from '../../search/service.js';
import { conditionalCriteria, lockedMatch, onlyMatch, searchOfHeader } from '../conditional.js';
import { assertJsonContentType, JSON_PATCH_TYPES, parseIfMatch, preferReturn } from '../negotiation.js';
import { requiredJsonBody } from '../request-body.js';
import { emptyResponse, outcomeResponse, textResponse, versionHeaders } from '../responses.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';
import { createFrom, writeResponse } from './writes.js';

/**
 * Conditional create, update, patch and delete (http.html 3.1.0.8-3.1.0.10). Each runs its search
 * and its write in one transaction, after a lock on the criteria (lockedMatch), so concurrent
 * requests with the same criteria see each other's writes.
 */

/**
 * `POST [type]` with `If-None-Exist`: none → create (201); one → that resource (200), nothing
 * written; several → 412. A committed match is an answer whatever else is running, so the search
 * runs first on its own; only a create, which must not duplicate a concurrent one, takes the lock
 * and searches again inside its transaction.
 */
export async function conditionalCreate(req: FhirRequest, ctx: RequestContext, type: string, body: unknown, ifNoneExist: string): Promise<FhirResponse> {
  const criteria = conditionalCriteria(searchOfHeader(ifNoneExist), 'If-None-Exist');
  const seen = ctx.transaction ? undefined : await onlyMatch(ctx, type, criteria);
  if (seen) return existingResponse(req, ctx, seen);
  return ctx.inTransaction(async (tx) => {
    const match = await lockedMatch(tx, type, criteria);
    if (match) return existingResponse(req, tx, match);
    return writeResponse(req, tx, await createFrom(req, tx, type, body));
  });
}

/** `PUT [type]?criteria`, by http.html's rules for no, one and several matches. */
export async function conditionalUpdateHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  assertJsonContentType(req.header('content-type'));
  const criteria = conditionalCriteria(req.query, `Conditional update of ${type}`);
  const body = await requiredJsonBody(req);
  if (!isRecord(body)) throw errors.invalid('The request body must be a JSON resource');
  const ifMatch = parseIfMatch(req.header('if-match'));
  return ctx.inTransaction(async (tx) => {
    const match = await lockedMatch(tx, type!, criteria);
    const id = body.id;
    if (match) {
      if (id !== undefined && id !== match.id) {
        throw errors.invalid(`The body id "${String(id)}" is not the id of the matching ${type}/${match.id}`, `${type}.id`);
      }
      return writeResponse(req, tx, await tx.repo.updateResource(type!, match.id, { ...body, id: match.id }, { ifMatch }));
    }
    if (id === undefined) return writeResponse(req, tx, await createFrom(req, tx, type!, body));
    if (typeof id !== 'string') throw errors.invalid('The body id must be a string', `${type}.id`);
    if (await exists(tx, type!, id)) {
      throw errors.conflict(`${type}/${id} exists but does not match the criteria: it is not updated`);
    }
    return writeResponse(req, tx, await tx.repo.updateResource(type!, id, body, { ifMatch }));
  });
}

/** `PATCH [type]?criteria`: one match → patched; none → 404; several → 412. */
export async function conditionalPatchHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  assertJsonContentType(req.header('content-type'), JSON_PATCH_TYPES);
  const criteria = conditionalCriteria(req.query, `Conditional patch of ${type}`);
  const body = await requiredJsonBody(req);
  const ifMatch = parseIfMatch(req.header('if-match'));
  return ctx.inTransaction(async (tx) => {
    const match = await lockedMatch(tx, type!, criteria);
    if (!match) throw errors.notFound(`No ${type} matches ${type}?${new URLSearchParams(criteria).toString()}`);
    return writeResponse(req, tx, await tx.repo.patchResource(type!, match.id, body, { ifMatch }));
  });
}

/**
 * `DELETE [type]?criteria`: none → 200 saying so; one → deleted; several → 412 (conditionalDelete
 * `single`: deleting many at once by criteria is refused, whatever `_count` says).
 */
export async function conditionalDeleteHandler(req: FhirRequest, { type }: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const criteria = conditionalCriteria(req.query, `Conditional delete of ${type}`);
  const ifMatch = parseIfMatch(req.header('if-match'));
  return ctx.inTransaction(async (tx) => {
    const match = await lockedMatch(tx, type!, criteria);
    if (!match) return outcomeResponse(allOk(`No ${type} matches the criteria: nothing deleted`), 200);
    await tx.repo.deleteResource(type!, match.id, { ifMatch });
    return outcomeResponse(allOk(`Deleted ${type}/${match.id}`), 200);
  });
}

/** Whether the id names a resource the caller can see (a deleted one does not count). */
async function exists(ctx: RequestContext, type: string, id: string): Promise<boolean> {
  try {
    await ctx.repo.readVersion(type, id);
    return true;
  } catch (error) {
    if (error instanceof OperationOutcomeError && (error.status === 404 || error.status === 410)) return false;
    throw error;
  }
}

/** The match of a conditional create: its Location, ETag and, as `Prefer` asks, its body (http.html requires both headers). */
export function existingResponse(req: FhirRequest, ctx: RequestContext, match: SearchRow): FhirResponse {
  const headers = versionHeaders(match);
  headers.Location = `${ctx.config.fhirBaseUrl}/${match.resourceType}/${match.id}/_history/${match.versionId}`;
  switch (preferReturn(req.header('prefer'))) {
    case 'minimal':
      return emptyResponse(200, headers);
    case 'OperationOutcome':
      return outcomeResponse(allOk(`${match.resourceType}/${match.id} matches If-None-Exist: nothing created`), 200, headers);
    default:
      return textResponse(match.text, 200, headers);
  }
}
