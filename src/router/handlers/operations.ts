import type { RequestContext } from '../../operations/context.js';
import { acceptAsyncJob, prefersAsync } from '../../operations/jobs/async-jobs.js';
import { allOk, errors, OperationOutcomeError } from '../../fhir/outcome.js';
import { findBotOperation } from '../../bots/custom-operations.js';
import type { OperationLevel } from '../../operations/definition.js';
import { assertOperationAccess, assertOperationScopes, invokeOperation } from '../../operations/execute.js';
import { decodeBody, decodeQuery } from '../../operations/parameters.js';
import { findOperationDefinition, resolveOperation, type Operation } from '../../operations/registry.js';
import { assertAnswerAcceptable, assertJsonContentType } from '../negotiation.js';
import { optionalJsonBody } from '../request-body.js';
import { resourceResponse } from '../responses.js';
import type { FhirRequest, FhirResponse, RouteParams } from '../types.js';
import { readHandler } from './resources.js';

/**
 * Every operation at one level (`$op`, `[type]/$op`, `[type]/[id]/$op`): routing, GET eligibility
 * and decoding all come from the OperationDefinition (SPEC 4.1).
 */
export function operationHandler(level: OperationLevel) {
  return async (req: FhirRequest, { type, id, op }: RouteParams, ctx: RequestContext): Promise<FhirResponse> => {
    const operation = await resolveWithCustom(ctx, op!.slice(1), level, type);
    const definition = operation.definition;
    // What an operation that writes reads decides its writes: from the primary, as they go.
    if (definition.affectsState) ctx.reads.usePrimary();
    const request = { level, resourceType: type, id, ctx, db: ctx.database };
    assertOperationAccess(operation, request);
    operation.authorize?.(request);
    assertOperationScopes(operation, request);
    if (operation.onlyAsync && !prefersAsync(req.header('prefer'))) {
      throw errors.invalid(`Operation $${definition.code} runs only asynchronously: send the header Prefer: respond-async`);
    }
    let input;
    if (req.method === 'GET') {
      // SPEC 4.1 rule 4: GET only when the operation does not affect state.
      if (definition.affectsState) {
        throw errors.methodNotAllowed(`Operation $${definition.code} changes data: call it with POST`, 'POST');
      }
      input = decodeQuery(definition, req.query);
    } else {
      await assertInputContentType(req);
      input = decodeBody(definition, await optionalJsonBody(req), {
        plainJson: operation.acceptsPlainJsonBody,
        bareResource: operation.bareResourceParameter,
        examined: operation.examinesResource,
        query: req.query,
      });
      if (operation.readsQueryOnPost && req.query.size > 0) input = { ...decodeQuery(definition, req.query), ...input };
    }
    if (operation.respondsAsync && prefersAsync(req.header('prefer'))) {
      const fhirBase = ctx.config.fhirBaseUrl;
      const search = req.query.size > 0 ? `?${req.query.toString()}` : '';
      const job = await acceptAsyncJob(operation, input, request, `${fhirBase}/${req.path}${search}`);
      const location = operation.asyncStatusUrl?.(fhirBase, job.id!) ?? `${fhirBase}/AsyncJob/${job.id}`;
      const accepted = allOk(`Accepted: $${definition.code} runs as AsyncJob/${job.id}; poll ${location} for its status and output`);
      return resourceResponse(accepted, 202, { 'Content-Location': location });
    }
    const result = await invokeOperation(operation, input, request);
    // Some operations write through services of their own (accounts, keys): their writes are marked too.
    if (definition.affectsState) await ctx.reads.wrote();
    return resourceResponse(result.resource, result.status);
  };
}

/** A registered operation, or else a custom one of the caller's project implemented by a Bot (src/bots/custom-operations.ts). */
async function resolveWithCustom(ctx: RequestContext, code: string, level: OperationLevel, type: string | undefined): Promise<Operation> {
  try {
    return resolveOperation(code, level, type);
  } catch (error) {
    if (!(error instanceof OperationOutcomeError) || error.status !== 404) throw error;
    const custom = await findBotOperation(ctx, code, level, type);
    if (!custom) throw error;
    return custom;
  }
}

/** A POST without a body is an operation without input: it needs no Content-Type. */
async function assertInputContentType(req: FhirRequest): Promise<void> {
  const contentType = req.header('content-type');
  if (contentType === undefined && (req.body === undefined || (await req.body.bytes()).byteLength === 0)) return;
  assertJsonContentType(contentType);
}

/** `GET OperationDefinition/[id]`: the registered definitions (not stored rows) first, then the store. */
export async function operationDefinitionReadHandler(req: FhirRequest, params: RouteParams, ctx: RequestContext): Promise<FhirResponse> {
  const definition = findOperationDefinition(params.id!);
  if (!definition) return readHandler(req, params, ctx);
  assertAnswerAcceptable(req);
  return resourceResponse(definition);
}
