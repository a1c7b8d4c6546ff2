import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

const api = await useTestServer();

/** Client-chosen ids are unique server-wide: an id another project holds is refused, saying nothing of it. */
describe('update-as-create with a client-chosen id', () => {
  it('answers 409 for an id that exists in another project, and leaves it unchanged', async () => {
    const owner = api.newProject();
    const id = `taken-${randomUUID()}`;
    const created = await owner.put(`/Patient/${id}`, patientBody({ id }));
    expect(created.status).toBe(201);
    const res = await api.newProject().put(`/Patient/${id}`, patientBody({ id, gender: 'female' }));
    expect(res.status).toBe(409);
    expect(res.body.issue[0].code).toBe('conflict');
    expect(res.body.issue[0].details.text).toContain('already in use');
    expect((await owner.get(`/Patient/${id}`)).body.meta.versionId).toBe(created.body.meta.versionId);
  });

  it('answers the same 409 when the other project has deleted it', async () => {
    const owner = api.newProject();
    const id = `deleted-${randomUUID()}`;
    await owner.put(`/Patient/${id}`, patientBody({ id }));
    await owner.delete(`/Patient/${id}`);
    const res = await api.newProject().put(`/Patient/${id}`, patientBody({ id }));
    expect(res.status).toBe(409);
    expect(res.body.issue[0].details.text).toContain('already in use');
  });
});
