import type { RequestContext } from '../operations/context.js';
import type { BotApiCall } from '../bots/host-calls.js';
import type { HostResponse } from '../bots/sandbox/protocol.js';
import { textBody } from './request-body.js';
import type { EntryRouter, FhirMethod, FhirRequest } from './types.js';

const METHODS: readonly FhirMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * A bot's API call (its MedplumClient's fetch) as a request of the router, run in `ctx` (the
 * bot's membership): the same handlers and checks as REST, the answer as text for the sandbox.
 */
export async function routeBotCall(router: EntryRouter, ctx: RequestContext, call: BotApiCall): Promise<HostResponse> {
  const method = call.method.toUpperCase() as FhirMethod;
  const [path, query = ''] = call.path.split('?', 2);
  const headers = Object.fromEntries(Object.entries(call.headers).map(([name, value]) => [name.toLowerCase(), value]));
  const bytes = new TextEncoder().encode(call.body ?? '');
  const req: FhirRequest = {
    method: METHODS.includes(method) ? method : 'GET',
    path: decodeURIComponent(path.replace(/\/+$/, '')),
    query: new URLSearchParams(query),
    header: (name) => headers[name],
    body: call.body === undefined ? undefined : textBody(async () => call.body!, async () => bytes),
  };
  const response = await router.handle(req, ctx);
  const body = response.body;
  const text = body === undefined ? '' : typeof body === 'string' ? body : body instanceof Uint8Array ? new TextDecoder().decode(body) : JSON.stringify(body);
  const contentType = response.headers['Content-Type'] ?? response.headers['content-type'] ?? (body instanceof Uint8Array ? 'application/octet-stream' : 'application/fhir+json');
  return { status: response.status, headers: { ...lowerCased(response.headers), 'content-type': contentType }, body: text };
}

function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
