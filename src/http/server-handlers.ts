import { authenticateRequest } from '../auth/authenticate.js';
import { buildCapabilityStatement, projectCapabilityText } from './capability.js';
import { SERVER_VERSION } from '../fhir/software.js';
import { type Services } from '../operations/context.js';
import { isDatabaseHealthy } from '../access/context.js';
import type { HonoContext } from './fhir-handlers.js';
import { assertJsonAcceptable } from './negotiation.js';
import { fhirText } from './responses.js';
import type { Route } from './route.js';

/** The CapabilityStatement is fixed for a process's configuration: built once per server. */
const capabilityByServices = new WeakMap<Services, string>();

/** `GET /metadata`: the CapabilityStatement generated from the route table it is served from. */
export async function metadataHandler(c: HonoContext, routes: readonly Route[]): Promise<Response> {
  assertJsonAcceptable(c.req.query('_format') ?? null, c.req.header('accept') ?? null);
  const services = c.get('services');
  let text = capabilityByServices.get(services);
  if (!text) {
    text = JSON.stringify(buildCapabilityStatement(services.config, routes));
    capabilityByServices.set(services, text);
  }
  // Public; with a bearer token (checked as on every route), the caller's project's own search parameters too.
  if (c.req.header('authorization') !== undefined) {
    text = await projectCapabilityText(services.db, await authenticateRequest(services.auth, c.req.raw), text);
  }
  return fhirText(text, 200, {}, c.req.query('_pretty') === 'true');
}

export async function healthcheckHandler(c: HonoContext): Promise<Response> {
  const db = c.get('services').db;
  const ok = await isDatabaseHealthy(db);
  return Response.json({ ok, version: SERVER_VERSION, database: { kind: db.kind, ok } }, { status: ok ? 200 : 503 });
}
