import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

// GraphQL reads its request body itself and answers through its own fast path (src/graphql/http-body.ts,
// src/graphql/http-fast-path.ts): the HTTP layer's behaviours must hold for it as for REST.

const MAX_BODY_BYTES = 4096;
const api = await useTestServer({ MAX_BODY_BYTES: String(MAX_BODY_BYTES) });

async function post(path: string, body: BodyInit, headers: Record<string, string> = {}): Promise<Response> {
  const client = api.newProject();
  return api.raw(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()), ...headers },
    body,
    // A stream body goes out chunked, without Content-Length.
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
}

function streamOf(text: string, chunkSize: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, (offset += chunkSize)));
    },
  });
}

const HEALTH = JSON.stringify({ query: '{ health { ok } }' });

describe('GraphQL over HTTP', () => {
  it('echoes a client X-Request-Id and makes one otherwise', async () => {
    const mine = await post('/fhir/R4/$graphql', HEALTH, { 'X-Request-Id': 'graphql-123' });
    expect(mine.status).toBe(200);
    expect(mine.headers.get('x-request-id')).toBe('graphql-123');
    const made = await post('/graphql', HEALTH);
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers browsers with the CORS headers REST gives', async () => {
    const res = await post('/fhir/R4/$graphql', HEALTH, { Origin: 'http://app.example' });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Request-Id');
  });

  it('refuses a body over the limit with 413 and an OperationOutcome', async () => {
    const query = `{ health { ok } } # ${'x'.repeat(MAX_BODY_BYTES)}`;
    const res = await post('/fhir/R4/$graphql', JSON.stringify({ query }));
    expect(res.status).toBe(413);
    const body = await res.json();
    expect(body.resourceType).toBe('OperationOutcome');
    expect(body.issue[0].code).toBe('too-long');
  });

  it('refuses a chunked body over the limit, which has no Content-Length to check', async () => {
    const query = `{ health { ok } } # ${'x'.repeat(MAX_BODY_BYTES)}`;
    const res = await post('/graphql', streamOf(JSON.stringify({ query }), 1000));
    expect(res.status).toBe(413);
    expect((await res.json()).issue[0].code).toBe('too-long');
  });

  it('reads a chunked body within the limit', async () => {
    const res = await post('/graphql', streamOf(HEALTH, 5));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { health: { ok: true } } });
  });

  it('reads a body with a UTF-8 byte order mark and multi-byte characters split across chunks', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Ørsted-Ström' }] });
    const body = `\uFEFF${JSON.stringify({ query: `{ Patient(id: "${created.body.id}") { name { family } } }` })}`;
    const res = await api.raw('/fhir/R4/$graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
      body: streamOf(body, 3),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { Patient: { name: [{ family: 'Ørsted-Ström' }] } } });
  });

  it('answers invalid JSON as yoga does: 400 with a GraphQL error', async () => {
    const res = await post('/fhir/R4/$graphql', '{ "query": ', { Accept: 'application/graphql-response+json' });
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].message).toBe('POST body sent invalid JSON.');
  });
});
