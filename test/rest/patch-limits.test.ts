import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const MAX_BODY_BYTES = 65_536;
const MAX_PATCH_OPERATIONS = 50;
const api = await useTestServer({ MAX_BODY_BYTES: String(MAX_BODY_BYTES), MAX_PATCH_OPERATIONS: String(MAX_PATCH_OPERATIONS) });

/** A 1 KB patch that doubles the resource with every copy: 40 copies would need terabytes. */
const doublingPatch = [
  { op: 'add', path: '/name', value: [{}] },
  ...Array.from({ length: 40 }, () => ({ op: 'copy', from: '/name', path: '/name/-' })),
];

interface Issue {
  code: string;
  details: { text: string };
  expression?: string[];
}

async function newPatient(client: ProjectClient): Promise<{ id: string; versionId: string }> {
  const created = await client.post('/Patient', patientBody());
  return { id: created.body.id, versionId: created.body.meta.versionId };
}

describe('JSON Patch limits', () => {
  it('refuses copies that would grow the resource past MAX_BODY_BYTES with 413 naming the operation', async () => {
    const client = api.newProject();
    const { id, versionId } = await newPatient(client);
    const res = await client.patch(`/Patient/${id}`, doublingPatch);
    expect(res.status).toBe(413);
    const issue = (res.body.issue as Issue[])[0];
    expect(issue.code).toBe('too-long');
    expect(issue.expression?.[0]).toMatch(/^Patch\[\d+\]$/);
    expect(issue.details.text).toMatch(/operation \d+ \(copy/);
    expect((await client.get(`/Patient/${id}`)).body.meta.versionId).toBe(versionId);
  });

  it('refuses a patched resource larger than MAX_BODY_BYTES with 413', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody({ name: [{ text: 'x'.repeat(40_000) }] }));
    expect(created.status).toBe(201);
    // The patch fits in a body; the resource it makes does not.
    const res = await client.patch(`/Patient/${created.body.id}`, [{ op: 'add', path: '/name/-', value: { text: 'y'.repeat(40_000) } }]);
    expect(res.status).toBe(413);
    expect((res.body.issue as Issue[])[0].details.text).toContain(`${MAX_BODY_BYTES} bytes`);
  });

  it('refuses more operations than MAX_PATCH_OPERATIONS with 400 before applying any', async () => {
    const client = api.newProject();
    const { id } = await newPatient(client);
    const patch = Array.from({ length: MAX_PATCH_OPERATIONS + 1 }, () => ({ op: 'test', path: '/gender', value: 'male' }));
    const res = await client.patch(`/Patient/${id}`, patch);
    expect(res.status).toBe(400);
    const issue = (res.body.issue as Issue[])[0];
    expect(issue.details.text).toContain(`at most ${MAX_PATCH_OPERATIONS} operations`);
    expect(issue.expression).toEqual([`Patch[${MAX_PATCH_OPERATIONS}]`]);
  });

  it('bounds a conditional PATCH the same way', async () => {
    const client = api.newProject();
    const { id } = await newPatient(client);
    const res = await client.patch(`/Patient?_id=${id}`, doublingPatch);
    expect(res.status).toBe(413);
  });

  it('bounds a PATCH entry of a batch Bundle the same way', async () => {
    const client = api.newProject();
    const { id } = await newPatient(client);
    const data = Buffer.from(JSON.stringify(doublingPatch)).toString('base64');
    const res = await client.post('/', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [{ request: { method: 'PATCH', url: `Patient/${id}` }, resource: { resourceType: 'Binary', contentType: 'application/json-patch+json', data } }],
    });
    expect(res.status).toBe(200);
    expect(res.body.entry[0].response.status).toMatch(/^413/);
  });
});
