import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

const api = await useTestServer({ MAX_BODY_BYTES: '4096' });

describe('server endpoints', () => {
  it('reports database status on /healthcheck', async () => {
    const res = await api.raw('/healthcheck');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ ok: true, database: { ok: true, kind: process.env.DATABASE_URL ? 'postgres' : 'pglite' } });
  });

  it('serves a CapabilityStatement listing resource types and interactions', async () => {
    const res = await api.raw('/fhir/R4/metadata');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ resourceType: 'CapabilityStatement', fhirVersion: '4.0.1', kind: 'instance' });
    const patient = body.rest[0].resource.find((r: { type: string }) => r.type === 'Patient');
    const codes = patient.interaction.map((i: { code: string }) => i.code).sort();
    expect(codes).toEqual(['create', 'delete', 'history-instance', 'history-type', 'patch', 'read', 'search-type', 'update', 'vread']);
    expect(body.rest[0].resource.map((r: { type: string }) => r.type)).toContain('ProjectMembership');
  });

  it('states full conditional read support in the CapabilityStatement', async () => {
    const body = await (await api.raw('/fhir/R4/metadata')).json();
    const patient = body.rest[0].resource.find((r: { type: string }) => r.type === 'Patient');
    expect(patient.conditionalRead).toBe('full-support');
  });

  it('echoes a client X-Request-Id and makes one otherwise', async () => {
    const mine = await api.raw('/healthcheck', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(mine.headers.get('x-request-id')).toBe('abc-123');
    const made = await api.raw('/healthcheck');
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('echoes X-Request-Id on a FHIR read', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await client.get(`/Patient/${created.body.id}`, { 'X-Request-Id': 'read-42' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('read-42');
  });

  it('echoes X-Request-Id on a FHIR error answer', async () => {
    const res = await api.newProject().get('/Patient/no-such-patient', { 'X-Request-Id': 'missing-7' });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toBe('missing-7');
  });

  it('makes one X-Request-Id for a FHIR create that sends none', async () => {
    const res = await api.newProject().post('/Patient', patientBody());
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 413 with an OperationOutcome for a body over the limit', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', patientBody({ name: [{ text: 'x'.repeat(10_000) }] }));
    expect(res.status).toBe(413);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect((res.body.issue as { code: string }[])[0].code).toBe('too-long');
  });

  it('answers unknown endpoints with a 404 OperationOutcome', async () => {
    const res = await api.raw('/nowhere');
    expect(res.status).toBe(404);
    expect((await res.json()).resourceType).toBe('OperationOutcome');
  });

  it('answers a method the route table lacks with an OperationOutcome', async () => {
    const res = await api.raw('/fhir/R4/Patient/1/_history', { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect((await res.json()).issue[0].code).toBe('not-supported');
  });
});

describe('CORS', () => {
  it('answers a browser preflight and exposes the FHIR headers', async () => {
    const res = await api.raw('/fhir/R4/Patient', {
      method: 'OPTIONS',
      headers: { Origin: 'http://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,authorization' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toContain('PATCH');
  });

  it('allows the conditional request headers in a browser preflight', async () => {
    const res = await api.raw('/fhir/R4/Patient', {
      method: 'OPTIONS',
      headers: { Origin: 'http://app.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'if-modified-since,if-none-exist' },
    });
    expect(res.status).toBe(204);
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    expect(allowed).toContain('if-modified-since');
    expect(allowed).toContain('if-none-exist');
  });

  it('exposes ETag and Location to browser scripts', async () => {
    const res = await api.raw('/healthcheck', { headers: { Origin: 'http://app.example' } });
    expect(res.headers.get('access-control-expose-headers')).toContain('ETag');
  });
});
