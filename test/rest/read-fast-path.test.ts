import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { rawGet as rawGetUrl, type RawAnswer } from '../helpers/raw-http.js';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

// A read by id without a query string is answered by the fast path (src/http/read-fast-path.ts);
// the same read with `?_pretty=false` goes through the Hono application. Clients must not be able
// to tell them apart: same status, headers (but Date) and bytes.

const api = await useTestServer();
const rawGet = (path: string, headers: Record<string, string>) => rawGetUrl(`${api.url}${path}`, headers);

/** The fast path's answer and the full path's answer to the same read. */
async function bothWays(path: string, headers: Record<string, string>): Promise<[RawAnswer, RawAnswer]> {
  const withId = { 'X-Request-Id': 'same-request', ...headers };
  return [await rawGet(path, withId), await rawGet(`${path}?_pretty=false`, withId)];
}

function withoutDate(answer: RawAnswer): Record<string, unknown> {
  const { date: _date, ...headers } = answer.headers;
  return headers;
}

async function createdPatient(client: ProjectClient, overrides: Record<string, unknown> = {}): Promise<string> {
  const created = await client.post('/Patient', patientBody(overrides));
  expect(created.status).toBe(201);
  return created.body.id;
}

describe('the read fast path', () => {
  it('answers a read with the full path’s status, headers and bytes', async () => {
    const client = api.newProject();
    const id = await createdPatient(client);
    const [fast, full] = await bothWays(`/fhir/R4/Patient/${id}`, await client.authHeaders());
    expect(fast.status).toBe(200);
    expect(withoutDate(fast)).toEqual(withoutDate(full));
    expect(fast.body.equals(full.body)).toBe(true);
    expect(JSON.parse(fast.body.toString()).id).toBe(id);
  });

  it('counts Content-Length in bytes for a resource with characters outside ASCII', async () => {
    const client = api.newProject();
    const id = await createdPatient(client, { name: [{ family: 'Ågren', given: ['Zoë', '李'] }] });
    const [fast, full] = await bothWays(`/fhir/R4/Patient/${id}`, await client.authHeaders());
    expect(fast.headers['content-length']).toBe(String(fast.body.byteLength));
    expect(fast.body.byteLength).toBeGreaterThan(fast.body.toString().length);
    expect(fast.body.equals(full.body)).toBe(true);
    expect(JSON.parse(fast.body.toString()).name[0].given).toEqual(['Zoë', '李']);
  });

  it('compresses a large answer as the full path does when the client accepts gzip', async () => {
    const client = api.newProject();
    const id = await createdPatient(client, { text: { status: 'generated', div: `<div xmlns="http://www.w3.org/1999/xhtml">${'Peter '.repeat(400)}</div>` } });
    const [fast, full] = await bothWays(`/fhir/R4/Patient/${id}`, { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip, deflate' });
    expect(fast.headers['content-encoding']).toBe('gzip');
    expect(fast.headers.vary).toBe('Accept-Encoding');
    const { 'content-length': _fastLength, ...fastHeaders } = withoutDate(fast);
    const { 'content-length': _fullLength, 'transfer-encoding': _chunked, ...fullHeaders } = withoutDate(full);
    expect(fastHeaders).toEqual(fullHeaders);
    expect(gunzipSync(fast.body).equals(gunzipSync(full.body))).toBe(true);
  });

  it('leaves a small answer uncompressed, without Vary, even when the client accepts gzip', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', { resourceType: 'Patient', active: true });
    const [fast, full] = await bothWays(`/fhir/R4/Patient/${created.body.id}`, { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' });
    expect(fast.status).toBe(200);
    expect(fast.headers['content-encoding']).toBeUndefined();
    expect(withoutDate(fast)).toEqual(withoutDate(full));
  });

  it('answers an unknown id with the full path’s 404 OperationOutcome', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/Patient/no-such-patient', await client.authHeaders());
    expect(fast.status).toBe(404);
    expect(withoutDate(fast)).toEqual(withoutDate(full));
    expect(JSON.parse(fast.body.toString()).resourceType).toBe('OperationOutcome');
  });

  it('answers a missing token with the full path’s 401', async () => {
    const [fast, full] = await bothWays('/fhir/R4/Patient/anything', {});
    expect(fast.status).toBe(401);
    expect(withoutDate(fast)).toEqual(withoutDate(full));
    expect(fast.body.equals(full.body)).toBe(true);
  });

  it('answers a deleted resource with the full path’s 410', async () => {
    const client = api.newProject();
    const id = await createdPatient(client);
    expect((await client.delete(`/Patient/${id}`)).status).toBe(200);
    const [fast, full] = await bothWays(`/fhir/R4/Patient/${id}`, await client.authHeaders());
    expect(fast.status).toBe(410);
    expect(withoutDate(fast)).toEqual(withoutDate(full));
  });

  it('answers If-None-Match with the current version with the full path’s 304', async () => {
    const client = api.newProject();
    const id = await createdPatient(client);
    const etag = (await client.get(`/Patient/${id}`)).headers.get('etag')!;
    const [fast, full] = await bothWays(`/fhir/R4/Patient/${id}`, { ...(await client.authHeaders()), 'If-None-Match': etag });
    expect(fast.status).toBe(304);
    expect(fast.body.length).toBe(0);
    // @hono/node-server gives every answer a Content-Type, text/plain when it has none; a 304
    // carries no representation (RFC 9110 15.4.5), so the fast path sends none.
    expect(fast.headers['content-type']).toBeUndefined();
    const { 'content-type': _plain, ...fullHeaders } = withoutDate(full);
    expect(withoutDate(fast)).toEqual(fullHeaders);
  });

  it('never shows another project’s resource', async () => {
    const owner = api.newProject();
    const other = api.newProject();
    const id = await createdPatient(owner);
    const [fast] = await bothWays(`/fhir/R4/Patient/${id}`, await other.authHeaders());
    expect(fast.status).toBe(404);
  });

  it('makes an X-Request-Id when the client sends none', async () => {
    const client = api.newProject();
    const id = await createdPatient(client);
    const answer = await rawGet(`/fhir/R4/Patient/${id}`, await client.authHeaders());
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
