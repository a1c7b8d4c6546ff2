import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { bodyWeight } from './helpers.js';

/** A meta.profile url no definition has: stored unchecked, unless the project's setting refuses it. */

const api = await useTestServer();
const UNKNOWN = 'https://example.org/fhir/StructureDefinition/unheard-of';

async function refuseUnknownProfiles(client: ProjectClient, value: boolean): Promise<void> {
  await client.token(); // the project is made on the client's first use
  const project = (await api.superAdmin.get(`/Project/${client.projectId}`)).body;
  const res = await api.superAdmin.put(`/Project/${client.projectId}`, { ...project, setting: [{ name: 'refuseUnknownProfiles', valueBoolean: value }] });
  if (res.status !== 200) throw new Error(`updating the project failed: ${res.status} ${res.text}`);
}

describe('unknown profiles', () => {
  it('are accepted by default', async () => {
    const res = await api.newProject().post('/Observation', bodyWeight({ meta: { profile: [UNKNOWN] } }));
    expect(res.status).toBe(201);
    expect(res.body.meta.profile).toEqual([UNKNOWN]);
  });

  it('are refused with 400 naming the url when the project has refuseUnknownProfiles', async () => {
    const client = api.newProject();
    await refuseUnknownProfiles(client, true);
    const res = await client.post('/Observation', bodyWeight({ meta: { profile: [UNKNOWN] } }));
    expect(res.status).toBe(400);
    expect(res.body.issue).toEqual([
      {
        severity: 'error',
        code: 'not-found',
        details: { text: expect.stringContaining(`Unknown profile ${UNKNOWN}: this project refuses profiles it cannot check`) },
        expression: ['Observation.meta.profile[0]'],
      },
    ]);
  });

  it('are accepted again when the setting is false, and known profiles are still checked with it on', async () => {
    const client = api.newProject();
    await refuseUnknownProfiles(client, true);
    expect((await client.post('/Observation', bodyWeight())).status).toBe(201);
    await refuseUnknownProfiles(client, false);
    expect((await client.post('/Observation', bodyWeight({ meta: { profile: [UNKNOWN] } }))).status).toBe(201);
  });
});
