import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CHUNK_BYTES } from '../../src/storage/binary-storage.js';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer();
const bytes = Uint8Array.from([0, 1, 2, 250, 255, 37, 80, 68, 70]);

async function upload(contentType = 'application/pdf') {
  const client = api.newProject();
  const res = await client.request('POST', '/Binary', bytes, { 'Content-Type': contentType });
  return { client, res };
}

describe('Binary', () => {
  it('stores raw bytes of any content type and answers 201 with a Binary resource', async () => {
    const { res } = await upload();
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ resourceType: 'Binary', contentType: 'application/pdf' });
    expect(res.body.data).toBeUndefined();
  });

  it('returns the bytes with their content type on read', async () => {
    const { client, res } = await upload('image/png');
    const read = await fetch(`${api.fhir}/Binary/${res.body.id}`, { headers: await client.authHeaders() });
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe('image/png');
    expect(new Uint8Array(await read.arrayBuffer())).toEqual(bytes);
  });

  it('returns the FHIR JSON form with base64 data when asked for application/fhir+json', async () => {
    const { client, res } = await upload();
    const read = await client.get(`/Binary/${res.body.id}`, { Accept: 'application/fhir+json' });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ resourceType: 'Binary', contentType: 'application/pdf', data: Buffer.from(bytes).toString('base64') });
  });

  it('accepts the FHIR JSON form on create and serves its bytes raw', async () => {
    const client = api.newProject();
    const data = Buffer.from('hello, binary').toString('base64');
    const res = await client.post('/Binary', { resourceType: 'Binary', contentType: 'text/plain', data });
    expect(res.status).toBe(201);
    const read = await fetch(`${api.fhir}/Binary/${res.body.id}`, { headers: await client.authHeaders() });
    expect(await read.text()).toBe('hello, binary');
  });

  it('rejects FHIR JSON Binary data that is not base64', async () => {
    const res = await api.newProject().post('/Binary', { resourceType: 'Binary', contentType: 'text/plain', data: '***' });
    expect(res.status).toBe(400);
  });

  it('hides bytes from other projects', async () => {
    const { res } = await upload();
    const other = api.newProject();
    expect((await other.get(`/Binary/${res.body.id}`)).status).toBe(404);
  });
});

describe('Binary update', () => {
  it('replaces the bytes on a raw PUT and keeps old bytes for vread', async () => {
    const { client, res } = await upload('text/plain');
    const newBytes = Uint8Array.from(Buffer.from('second version'));
    const put = await client.request('PUT', `/Binary/${res.body.id}`, newBytes, { 'Content-Type': 'text/markdown' });
    expect(put.status).toBe(200);
    expect(put.body.contentType).toBe('text/markdown');
    const headers = await client.authHeaders();
    const current = await fetch(`${api.fhir}/Binary/${res.body.id}`, { headers });
    expect(current.headers.get('content-type')).toBe('text/markdown');
    expect(await current.text()).toBe('second version');
    const old = await fetch(`${api.fhir}/Binary/${res.body.id}/_history/${res.body.meta.versionId}`, { headers });
    expect(new Uint8Array(await old.arrayBuffer())).toEqual(bytes);
  });

  it('keeps the securityContext on a raw PUT without X-Security-Context, and takes the header when given', async () => {
    const client = api.newProject();
    const [first, second] = [(await client.post('/Patient', { resourceType: 'Patient' })).body.id, (await client.post('/Patient', { resourceType: 'Patient' })).body.id];
    const created = await client.request('POST', '/Binary', bytes, { 'Content-Type': 'text/plain', 'X-Security-Context': `Patient/${first}` });
    expect(created.body.securityContext).toEqual({ reference: `Patient/${first}` });
    const kept = await client.request('PUT', `/Binary/${created.body.id}`, bytes, { 'Content-Type': 'text/plain' });
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.securityContext).toEqual({ reference: `Patient/${first}` });
    const moved = await client.request('PUT', `/Binary/${created.body.id}`, bytes, { 'Content-Type': 'text/plain', 'X-Security-Context': `Patient/${second}` });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.securityContext).toEqual({ reference: `Patient/${second}` });
    const read = await client.get(`/Binary/${created.body.id}`, { Accept: 'application/fhir+json' });
    expect(read.body.securityContext).toEqual({ reference: `Patient/${second}` });
    expect((await client.get(`/Binary?_compartment=Patient/${second}`)).body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([created.body.id]);
  });

  it('refuses (400) an X-Security-Context that is not a reference, on PUT and POST, changing nothing', async () => {
    const { client, res } = await upload('text/plain');
    for (const header of ['not a reference', 'Nonsense/123', 'Patient/', 'Patient/1/_history/2']) {
      const put = await client.request('PUT', `/Binary/${res.body.id}`, bytes, { 'Content-Type': 'text/plain', 'X-Security-Context': header });
      expect(put.status, header).toBe(400);
      expect(put.body.resourceType).toBe('OperationOutcome');
      expect(put.body.issue[0].code).toBe('invalid');
      const post = await client.request('POST', '/Binary', bytes, { 'Content-Type': 'text/plain', 'X-Security-Context': header });
      expect(post.status, header).toBe(400);
    }
    const read = await client.get(`/Binary/${res.body.id}`, { Accept: 'application/fhir+json' });
    expect(read.body.meta.versionId).toBe(res.body.meta.versionId);
  });
});

describe('Binary bytes stored in chunks', () => {
  it('round-trips a Binary of several chunks byte for byte, with its Content-Length', async () => {
    const client = api.newProject();
    const large = randomBytes(CHUNK_BYTES * 2 + 12_345);
    const res = await client.request('POST', '/Binary', large, { 'Content-Type': 'application/octet-stream' });
    expect(res.status).toBe(201);
    const read = await fetch(`${api.fhir}/Binary/${res.body.id}`, { headers: await client.authHeaders() });
    expect(read.status).toBe(200);
    expect(read.headers.get('content-length')).toBe(String(large.byteLength));
    expect(Buffer.from(await read.arrayBuffer()).equals(large)).toBe(true);
  });

  it('serves a Binary of several chunks as base64 in its FHIR JSON form', async () => {
    const client = api.newProject();
    const large = randomBytes(CHUNK_BYTES + 1);
    const res = await client.request('POST', '/Binary', large, { 'Content-Type': 'application/octet-stream' });
    const read = await client.get(`/Binary/${res.body.id}`, { Accept: 'application/fhir+json' });
    expect(read.body.data).toBe(large.toString('base64'));
  });

  it('serves an empty Binary as an empty body', async () => {
    const client = api.newProject();
    const res = await client.request('POST', '/Binary', new Uint8Array(), { 'Content-Type': 'text/plain' });
    const read = await fetch(`${api.fhir}/Binary/${res.body.id}`, { headers: await client.authHeaders() });
    expect(read.headers.get('content-length')).toBe('0');
    expect(await read.text()).toBe('');
  });
});
