import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { rawSend, type RawAnswer } from '../helpers/raw-http.js';
import { patientBody, useTestServer } from '../helpers/server.js';

// A create without a query string is answered by the fast path (src/http/create-fast-path.ts);
// the same create with `?_pretty=false` goes through the Hono application. Clients must not be
// able to tell them apart beyond what makes each resource its own (id, version, time).

const api = await useTestServer();
const FHIR_JSON = { 'Content-Type': 'application/fhir+json' };

/** The fast path's answer and the full path's answer to the same create. */
async function bothWays(path: string, headers: Record<string, string>, body: string): Promise<[RawAnswer, RawAnswer]> {
  const withId = { 'X-Request-Id': 'same-request', ...headers };
  return [await rawSend('POST', `${api.url}${path}`, withId, body), await rawSend('POST', `${api.url}${path}?_pretty=false`, withId, body)];
}

/** Headers but those naming the new version (Date, Location, ETag, Last-Modified). */
function sharedHeaders(answer: RawAnswer): Record<string, unknown> {
  const { date: _date, location: _location, etag: _etag, 'last-modified': _modified, ...headers } = answer.headers;
  return headers;
}

/** The created resource without what the server made for it alone. */
function content(body: Buffer): Record<string, unknown> {
  const { id: _id, meta, ...rest } = JSON.parse(body.toString()) as { id: string; meta: Record<string, unknown> };
  const { versionId: _versionId, lastUpdated: _lastUpdated, ...otherMeta } = meta;
  return { ...rest, meta: otherMeta };
}

describe('the create fast path', () => {
  it('answers a create with the full path’s status, headers and body', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/Patient', { ...(await client.authHeaders()), ...FHIR_JSON }, JSON.stringify(patientBody()));
    expect(fast.status).toBe(201);
    expect(sharedHeaders(fast)).toEqual(sharedHeaders(full));
    expect(content(fast.body)).toEqual(content(full.body));
    const created = JSON.parse(fast.body.toString()) as { id: string; meta: { versionId: string } };
    const fullCreated = JSON.parse(full.body.toString()) as { id: string; meta: { versionId: string } };
    const base = String(full.headers.location).replace(`Patient/${fullCreated.id}/_history/${fullCreated.meta.versionId}`, '');
    expect(fast.headers.location).toBe(`${base}Patient/${created.id}/_history/${created.meta.versionId}`);
    expect(fast.headers.etag).toBe(`W/"${created.meta.versionId}"`);
    expect((await client.get(`/Patient/${created.id}`)).status).toBe(200);
  });

  it('compresses the answer as the full path does when the client accepts gzip', async () => {
    const client = api.newProject();
    const body = JSON.stringify(patientBody({ text: { status: 'generated', div: `<div xmlns="http://www.w3.org/1999/xhtml">${'Peter '.repeat(400)}</div>` } }));
    const [fast, full] = await bothWays('/fhir/R4/Patient', { ...(await client.authHeaders()), ...FHIR_JSON, 'Accept-Encoding': 'gzip' }, body);
    expect(fast.headers['content-encoding']).toBe('gzip');
    const { 'content-length': _fastLength, ...fastHeaders } = sharedHeaders(fast);
    const { 'content-length': _fullLength, 'transfer-encoding': _chunked, ...fullHeaders } = sharedHeaders(full);
    expect(fastHeaders).toEqual(fullHeaders);
    expect(content(gunzipSync(fast.body))).toEqual(content(gunzipSync(full.body)));
  });

  it('answers Prefer: return=minimal with an empty 201 and no Content-Type', async () => {
    const client = api.newProject();
    const headers = { ...(await client.authHeaders()), ...FHIR_JSON, Prefer: 'return=minimal' };
    const [fast, full] = await bothWays('/fhir/R4/Patient', headers, JSON.stringify(patientBody()));
    expect(fast.status).toBe(201);
    expect(fast.body.length).toBe(0);
    // @hono/node-server gives every answer a Content-Type, text/plain when it has none; an empty
    // answer has no representation to describe, so the fast path sends none.
    expect(fast.headers['content-type']).toBeUndefined();
    const { 'content-type': _plain, ...fullHeaders } = sharedHeaders(full);
    expect(sharedHeaders(fast)).toEqual(fullHeaders);
  });

  it('answers a body that is not JSON with the full path’s 400 OperationOutcome', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/Patient', { ...(await client.authHeaders()), ...FHIR_JSON }, '{"resourceType": "Patient",');
    expect(fast.status).toBe(400);
    expect(sharedHeaders(fast)).toEqual(sharedHeaders(full));
    expect(fast.body.equals(full.body)).toBe(true);
  });

  it('answers a resource of another type than the path’s with the full path’s 400', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/Observation', { ...(await client.authHeaders()), ...FHIR_JSON }, JSON.stringify(patientBody()));
    expect(fast.status).toBe(400);
    expect(fast.body.equals(full.body)).toBe(true);
  });

  it('answers a missing token with the full path’s 401, creating nothing', async () => {
    const [fast, full] = await bothWays('/fhir/R4/Patient', FHIR_JSON, JSON.stringify(patientBody()));
    expect(fast.status).toBe(401);
    expect(sharedHeaders(fast)).toEqual(sharedHeaders(full));
    expect(fast.body.equals(full.body)).toBe(true);
  });

  it('answers a body that is not FHIR JSON with the full path’s 415', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/Patient', { ...(await client.authHeaders()), 'Content-Type': 'text/plain' }, JSON.stringify(patientBody()));
    expect(fast.status).toBe(415);
    expect(sharedHeaders(fast)).toEqual(sharedHeaders(full));
    expect(fast.body.equals(full.body)).toBe(true);
  });
});
