import { inviteUser } from '../../admin/invite.js';
import type { HonoContext } from '../route.js';
import { jsonObject } from './json-object.js';
import { fhirJson } from '../responses.js';

/** `POST /admin/projects/{projectId}/invite` (SPEC 4.3): 201 with the new ProjectMembership. */
export async function inviteHandler(c: HonoContext): Promise<Response> {
  const body = await jsonObject(c, 'resourceType, firstName, lastName, externalId');
  const membership = await inviteUser(c.get('services').auth, c.get('ctx').identity, c.req.param('projectId') as string, body);
  return fhirJson(membership, 201);
}
