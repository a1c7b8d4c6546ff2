import { inviteUser } from '../../admin/invite.js';
import { errors } from '../../fhir/outcome.js';
import type { HonoContext } from '../route.js';
import { fhirJson } from '../responses.js';

/** `POST /admin/projects/{projectId}/invite` (SPEC 4.3): 201 with the new ProjectMembership. */
export async function inviteHandler(c: HonoContext): Promise<Response> {
  const body = await readJsonObject(c);
  const membership = await inviteUser(c.get('services').auth, c.get('ctx').identity, c.req.param('projectId') as string, body);
  return fhirJson(membership, 201);
}

async function readJsonObject(c: HonoContext): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw errors.invalid('Send a JSON object: resourceType, firstName, lastName, externalId');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw errors.invalid('Send a JSON object: resourceType, firstName, lastName, externalId');
  }
  return body as Record<string, unknown>;
}
