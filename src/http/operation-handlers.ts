import type { HonoContext } from './fhir-handlers.js';
import { readHandler } from './fhir-handlers.js';
import { assertJsonAcceptable, assertJsonContentType } from './negotiation.js';
import { fhirJson } from './responses.js';
import { allOk, errors } from '../fhir/outcome.js';
import { acceptAsyncJob, prefersAsync } from '../admin/async-job.js';
import type { OperationLevel } from '../operations/definition.js';
import { invokeOperation } from '../operations/execute.js';
import { decodeBody, decodeQuery } from '../operations/parameters.js';
import { findOperationDefinition, resolveOperation } from '../operations/registry.js';

/** Where the FHIR API is mounted (src/http/routes.ts). */
const FHIR_PATH = '/fhir/R4';

/**
 * The REST face of every operation at one level (`/$op`, `/{type}/$op`, `/{type}/{id}/$op`):
 * routing, GET eligibility and decoding all come from the OperationDefinition (SPEC 4.1).
 */
export function operationHandler(level: OperationLevel): (c: HonoContext) => Promise<Response> {
  return async (c) => {
    const { type, id, op } = c.req.param() as { type?: string; id?: string; op: string };
    const operation = resolveOperation(op.slice(1), level, type);
    const definition = operation.definition;
    assertJsonAcceptable(c.req.query('_format') ?? null, c.req.header('accept') ?? null);
    const request = { level, resourceType: type, id, ctx: c.get('ctx'), db: c.get('services').db };
    operation.authorize?.(request);
    let input;
    if (c.req.method === 'GET') {
      // SPEC 4.1 rule 4: GET only when the operation does not affect state.
      if (definition.affectsState) {
        throw errors.methodNotAllowed(`Operation $${definition.code} changes data: call it with POST`, 'POST');
      }
      input = decodeQuery(definition, new URL(c.req.url).searchParams);
    } else {
      assertJsonContentType(c.req.header('content-type'));
      input = decodeBody(definition, await readBody(c), { plainJson: operation.acceptsPlainJsonBody });
    }
    if (operation.respondsAsync && prefersAsync(c.req.header('prefer'))) {
      const fhirBase = c.get('services').config.fhirBaseUrl;
      const url = new URL(c.req.url);
      const { id } = await acceptAsyncJob(operation, input, request, `${fhirBase}${url.pathname.slice(FHIR_PATH.length)}${url.search}`);
      const location = `${fhirBase}/AsyncJob/${id}`;
      const accepted = allOk(`Accepted: $${definition.code} runs as AsyncJob/${id}; poll ${location} for its status and output`);
      return fhirJson(accepted, 202, { 'Content-Location': location }, c.req.query('_pretty') === 'true');
    }
    const result = await invokeOperation(operation, input, request);
    return fhirJson(result.resource, result.status, {}, c.req.query('_pretty') === 'true');
  };
}

/** `GET /OperationDefinition/{id}`: the registered definitions (not stored rows) first, then the store. */
export async function operationDefinitionReadHandler(c: HonoContext): Promise<Response> {
  const definition = findOperationDefinition(c.req.param('id') as string);
  if (!definition) return readHandler(c);
  assertJsonAcceptable(c.req.query('_format') ?? null, c.req.header('accept') ?? null);
  return fhirJson(definition, 200, {}, c.req.query('_pretty') === 'true');
}

async function readBody(c: HonoContext): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw errors.invalid(`The request body is not valid JSON: ${(error as Error).message}`);
  }
}
