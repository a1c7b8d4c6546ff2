import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { ASYNC, create, exportDone, exportedLines, idsOf } from './export-helpers.js';

/**
 * A member who is no admin exports what its AccessPolicy allows: the types it names, and of
 * those only the resources its criteria match, as its searches would find them.
 */

const api = await useTestServer();

/** A member of `owner`'s project under an AccessPolicy with these rules. */
async function memberWithPolicy(owner: ProjectClient, resource: unknown[]): Promise<ProjectClient> {
  const policy = await create(owner, { resourceType: 'AccessPolicy', resource });
  const member = await addMemberClient(api, owner, { accessPolicy: `AccessPolicy/${policy.id}` });
  return projectClient(api.fhir, owner.projectId, async () => member.token);
}

describe('$export under an AccessPolicy', () => {
  it('exports only the types the policy names and the resources its criteria match', async () => {
    const owner = api.newProject();
    const female = await create(owner, { resourceType: 'Patient', gender: 'female' });
    await create(owner, { resourceType: 'Patient', gender: 'male' });
    await create(owner, { resourceType: 'Observation', status: 'final', code: { text: 'not allowed' } });
    const member = await memberWithPolicy(owner, [{ resourceType: 'Patient', criteria: 'Patient?gender=female' }]);

    const { manifest } = await exportDone(member);
    expect(idsOf(await exportedLines(member, manifest))).toEqual([`Patient/${female.id}`]);
  });

  it('answers 403 for a _type the policy does not allow, before any job', async () => {
    const owner = api.newProject();
    const member = await memberWithPolicy(owner, [{ resourceType: 'Patient' }]);
    const res = await member.get('/$export?_type=Observation', ASYNC);
    expect(res.status).toBe(403);
    expect(res.body.issue[0].details.text).toContain('Observation');
  });

  it('lets a member without a policy export the whole project, as its searches see it', async () => {
    const owner = api.newProject();
    const patient = await create(owner, { resourceType: 'Patient', gender: 'other' });
    const member = await addMemberClient(api, owner);
    const client = projectClient(api.fhir, owner.projectId, async () => member.token);
    const { manifest } = await exportDone(client);
    expect(idsOf(await exportedLines(client, manifest))).toEqual([`Patient/${patient.id}`]);
  });
});
