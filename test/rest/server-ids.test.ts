import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

/**
 * Ids and version ids the server assigns are UUIDs that sort in the order they were made
 * (src/storage/ids.ts): new rows go to the end of the btrees keyed by them.
 */

const api = await useTestServer();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function pause(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 3));
}

describe('server-assigned ids', () => {
  it('gives resources created one after another ids in creation order', async () => {
    const client = api.newProject();
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      ids.push((await client.post('/Patient', patientBody())).body.id as string);
      await pause();
    }
    for (const id of ids) expect(id).toMatch(UUID);
    expect([...ids].sort()).toEqual(ids);
  });

  it('gives the versions of a resource ids in the order they were written', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const versions = [created.body.meta.versionId as string];
    for (let index = 0; index < 3; index++) {
      await pause();
      versions.push((await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: index % 2 ? 'male' : 'female' })).body.meta.versionId as string);
    }
    for (const versionId of versions) expect(versionId).toMatch(UUID);
    expect([...versions].sort()).toEqual(versions);
  });

  it('gives the resources a transaction creates ids of the same kind', async () => {
    const client = api.newProject();
    const bundle = {
      resourceType: 'Bundle', type: 'transaction',
      entry: [0, 1].map((index) => ({ fullUrl: `urn:uuid:00000000-0000-4000-8000-00000000000${index}`, resource: patientBody(), request: { method: 'POST', url: 'Patient' } })),
    };
    const answer = await client.post('', bundle);
    expect(answer.status).toBe(200);
    for (const entry of answer.body.entry as { response: { location: string } }[]) expect(/Patient\/([^/]+)/.exec(entry.response.location)?.[1]).toMatch(UUID);
  });
});
