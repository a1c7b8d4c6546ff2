import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

const api = await useTestServer({ MAX_BODY_BYTES: '4096' });

/** Bodies over MAX_BODY_BYTES are refused for every method that carries one; reads skip the check. */
describe('request body limit', () => {
  const large = () => patientBody({ name: [{ text: 'x'.repeat(10_000) }] });

  it('answers 413 with an OperationOutcome for a PUT body over the limit, and changes nothing', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody({ name: [{ family: 'Small' }] }));
    const res = await client.put(`/Patient/${created.body.id}`, { ...large(), id: created.body.id });
    expect(res.status).toBe(413);
    expect((res.body.issue as { code: string }[])[0].code).toBe('too-long');
    expect((await client.get(`/Patient/${created.body.id}`)).body.meta.versionId).toBe(created.body.meta.versionId);
  });

  it('answers 413 with an OperationOutcome for a PATCH body over the limit', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const patch = [{ op: 'add', path: '/name/0/text', value: 'x'.repeat(10_000) }];
    const res = await client.patch(`/Patient/${created.body.id}`, patch, { 'content-type': 'application/json-patch+json' });
    expect(res.status).toBe(413);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('answers 413 for a chunked POST body over the limit (no Content-Length)', async () => {
    const client = api.newProject();
    const bytes = new TextEncoder().encode(JSON.stringify(large()));
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 1024) controller.enqueue(bytes.subarray(i, i + 1024));
        controller.close();
      },
    });
    const res = await fetch(`${api.url}/fhir/R4/Patient`, {
      method: 'POST',
      headers: { ...(await client.authHeaders()), 'content-type': 'application/fhir+json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
  });

  it('serves GET and HEAD reads whatever the limit', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
    const head = await fetch(`${api.url}/fhir/R4/Patient/${created.body.id}`, { method: 'HEAD', headers: await client.authHeaders() });
    expect(head.status).toBe(200);
  });
});
