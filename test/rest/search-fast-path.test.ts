import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { rawGet as rawGetUrl, type RawAnswer } from '../helpers/raw-http.js';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

// A type search without `_pretty` is answered by the fast path (src/http/search-fast-path.ts); the
// same search with `_pretty=false` goes through the Hono application. Clients must not be able to
// tell them apart: same status, headers (but Date and length) and body, but for the links, which
// repeat `_pretty=false`.

const api = await useTestServer();
const rawGet = (path: string, headers: Record<string, string>) => rawGetUrl(`${api.url}${path}`, headers);

/** The fast path's answer and the full path's answer to the same search. */
async function bothWays(path: string, headers: Record<string, string>): Promise<[RawAnswer, RawAnswer]> {
  const withId = { 'X-Request-Id': 'same-request', ...headers };
  const separator = path.includes('?') ? '&' : '?';
  return [await rawGet(path, withId), await rawGet(`${path}${separator}_pretty=false`, withId)];
}

function comparableHeaders(answer: RawAnswer): Record<string, unknown> {
  const { date: _date, 'content-length': _length, 'transfer-encoding': _chunked, ...headers } = answer.headers;
  return headers;
}

/** The body, its link URLs without the `_pretty=false` that forced the full path. */
function comparableBody(bytes: Buffer): unknown {
  const body = JSON.parse(bytes.toString()) as { link?: { relation: string; url: string }[] };
  body.link = body.link?.map((link) => {
    const url = new URL(link.url);
    url.searchParams.delete('_pretty');
    return { ...link, url: url.toString() };
  });
  return body;
}

async function patients(client: ProjectClient, family: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) expect((await client.post('/Patient', patientBody({ name: [{ family }] }))).status).toBe(201);
}

describe('the search fast path', () => {
  it('answers a search with the full path’s status, headers and body', async () => {
    const client = api.newProject();
    await patients(client, 'Fastpath', 3);
    const [fast, full] = await bothWays('/fhir/R4/Patient?name=fastpath&_total=accurate', await client.authHeaders());
    expect(fast.status).toBe(200);
    expect(comparableHeaders(fast)).toEqual(comparableHeaders(full));
    expect(comparableBody(fast.body)).toEqual(comparableBody(full.body));
    expect(JSON.parse(fast.body.toString()).total).toBe(3);
  });

  it('compresses a page as the full path does when the client accepts gzip', async () => {
    const client = api.newProject();
    await patients(client, 'Compressed', 25);
    const [fast, full] = await bothWays('/fhir/R4/Patient?_count=25', { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' });
    expect(fast.headers['content-encoding']).toBe('gzip');
    expect(fast.headers.vary).toBe('Accept-Encoding');
    expect(comparableHeaders(fast)).toEqual(comparableHeaders(full));
    expect(comparableBody(gunzipSync(fast.body))).toEqual(comparableBody(gunzipSync(full.body)));
  });

  it('answers an unknown search parameter with the full path’s 400 OperationOutcome', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/Patient?no-such-parameter=1', await client.authHeaders());
    expect(fast.status).toBe(400);
    expect(comparableHeaders(fast)).toEqual(comparableHeaders(full));
    expect(fast.body.equals(full.body)).toBe(true);
    expect(JSON.parse(fast.body.toString()).resourceType).toBe('OperationOutcome');
  });

  it('answers a missing token with the full path’s 401', async () => {
    const [fast, full] = await bothWays('/fhir/R4/Patient?name=x', {});
    expect(fast.status).toBe(401);
    expect(comparableHeaders(fast)).toEqual(comparableHeaders(full));
    expect(fast.body.equals(full.body)).toBe(true);
  });

  it('answers an unknown resource type with the full path’s answer', async () => {
    const client = api.newProject();
    const [fast, full] = await bothWays('/fhir/R4/NoSuchType?name=x', await client.authHeaders());
    expect(fast.status).toBe(full.status);
    expect(fast.status).toBeGreaterThanOrEqual(400);
    expect(fast.body.equals(full.body)).toBe(true);
  });

  it('never shows another project’s resources', async () => {
    const owner = api.newProject();
    const other = api.newProject();
    await patients(owner, 'Elsewhere', 1);
    const answer = await rawGet('/fhir/R4/Patient?name=elsewhere', await other.authHeaders());
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString()).entry).toBeUndefined();
  });
});
