import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

const api = await useTestServer();
const MRN = 'http://example.org/mrn';

type Entry = { request: { method: string; url: string; ifNoneExist?: string; ifMatch?: string }; resource?: Record<string, unknown> };
const batch = (entry: Entry[]) => ({ resourceType: 'Bundle', type: 'batch', entry });
const patchBinary = (ops: unknown[]) => ({
  resourceType: 'Binary',
  contentType: 'application/json-patch+json',
  data: Buffer.from(JSON.stringify(ops)).toString('base64'),
});

describe('batch', () => {
  it('answers a batch-response with one entry per request, in request order', async () => {
    const client = api.newProject();
    const existing = (await client.post('/Patient', patientBody())).body;
    const res = await client.post('', batch([
      { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
      { request: { method: 'GET', url: `Patient/${existing.id}` } },
      { request: { method: 'GET', url: 'Patient?_count=1' } },
    ]));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'batch-response' });
    expect(res.body.entry.map((e: { response: { status: string } }) => e.response.status)).toEqual(['201 Created', '200 OK', '200 OK']);
    expect(res.body.entry[1].resource.id).toBe(existing.id);
    expect(res.body.entry[2].resource.type).toBe('searchset');
  });

  it('gives each created entry its location, etag and lastModified', async () => {
    const res = await api.newProject().post('', batch([{ request: { method: 'POST', url: 'Patient' }, resource: patientBody() }]));
    const { resource, response } = res.body.entry[0];
    expect(response.location).toBe(`http://localhost/fhir/R4/Patient/${resource.id}/_history/${resource.meta.versionId}`);
    expect(response.etag).toBe(`W/"${resource.meta.versionId}"`);
    expect(response.lastModified).toBe(resource.meta.lastUpdated);
  });

  it('keeps a failing entry from affecting the others, with its outcome', async () => {
    const client = api.newProject();
    const res = await client.post('', batch([
      { request: { method: 'GET', url: 'Patient/does-not-exist' } },
      { request: { method: 'POST', url: 'Patient' }, resource: { resourceType: 'Patient', gender: 'not-a-gender' } },
      { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
    ]));
    expect(res.status).toBe(200);
    const [missing, invalid, created] = res.body.entry;
    expect(missing.response.status).toBe('404 Not Found');
    expect(missing.response.outcome.resourceType).toBe('OperationOutcome');
    expect(invalid.response.status).toMatch(/^400/);
    expect(created.response.status).toBe('201 Created');
    expect((await client.get(`/Patient/${created.resource.id}`)).status).toBe(200);
  });

  it('runs PUT, PATCH (a JSON Patch Binary) and DELETE entries', async () => {
    const client = api.newProject();
    const a = (await client.post('/Patient', patientBody())).body;
    const b = (await client.post('/Patient', patientBody())).body;
    const c = (await client.post('/Patient', patientBody())).body;
    const res = await client.post('', batch([
      { request: { method: 'PUT', url: `Patient/${a.id}` }, resource: { ...a, gender: 'female' } },
      { request: { method: 'PATCH', url: `Patient/${b.id}` }, resource: patchBinary([{ op: 'replace', path: '/gender', value: 'other' }]) },
      { request: { method: 'DELETE', url: `Patient/${c.id}` } },
    ]));
    expect(res.body.entry.map((e: { response: { status: string } }) => e.response.status)).toEqual(['200 OK', '200 OK', '200 OK']);
    expect((await client.get(`/Patient/${a.id}`)).body.gender).toBe('female');
    expect((await client.get(`/Patient/${b.id}`)).body.gender).toBe('other');
    expect((await client.get(`/Patient/${c.id}`)).status).toBe(410);
  });

  it('honours ifNoneExist and ifMatch in entries', async () => {
    const client = api.newProject();
    const mrn = randomUUID();
    const existing = (await client.post('/Patient', patientBody({ identifier: [{ system: MRN, value: mrn }] }))).body;
    const res = await client.post('', batch([
      { request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${MRN}|${mrn}` }, resource: patientBody() },
      { request: { method: 'PUT', url: `Patient/${existing.id}`, ifMatch: 'W/"stale"' }, resource: { ...existing, gender: 'female' } },
    ]));
    expect(res.body.entry[0].response.status).toBe('200 OK');
    expect(res.body.entry[0].resource.id).toBe(existing.id);
    expect(res.body.entry[1].response.status).toMatch(/^412/);
  });

  it('runs operations and capabilities in a batch', async () => {
    const client = api.newProject();
    const expand = 'ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender';
    const res = await client.post('', batch([{ request: { method: 'GET', url: expand } }, { request: { method: 'GET', url: 'metadata' } }]));
    expect(res.status).toBe(200);
    expect(res.body.entry[0].response.status).toBe('200 OK');
    expect(res.body.entry[0].resource.expansion.contains.map((c: { code: string }) => c.code)).toContain('female');
    expect(res.body.entry[1].resource.resourceType).toBe('CapabilityStatement');
  });

  it('reads many resources, each under the rules of a single read', async () => {
    const client = api.newProject();
    const mine = (await client.post('/Patient', patientBody())).body;
    const deleted = (await client.post('/Patient', patientBody())).body;
    await client.delete(`/Patient/${deleted.id}`);
    const theirs = (await api.newProject().post('/Patient', patientBody())).body;
    const res = await client.post('', batch([
      { request: { method: 'GET', url: `Patient/${mine.id}` } },
      { request: { method: 'GET', url: `Patient/${theirs.id}` } },
      { request: { method: 'GET', url: `Patient/${deleted.id}` } },
      { request: { method: 'GET', url: `Patient/${mine.id}` } },
    ]));
    expect(res.body.entry.map((e: { response: { status: string } }) => e.response.status)).toEqual(['200 OK', '404 Not Found', '410 Gone', '200 OK']);
    expect(res.body.entry[0].resource.id).toBe(mine.id);
    expect(res.body.entry[0].response.etag).toBe(`W/"${mine.meta.versionId}"`);
    expect(res.body.entry[1].resource).toBeUndefined();
  });

  it('accepts absolute entry URLs on this server', async () => {
    const client = api.newProject();
    const existing = (await client.post('/Patient', patientBody())).body;
    const res = await client.post('', batch([{ request: { method: 'GET', url: `http://localhost/fhir/R4/Patient/${existing.id}` } }]));
    expect(res.body.entry[0].resource.id).toBe(existing.id);
  });

  it('answers an entry without a request with its own 400 naming it', async () => {
    const res = await api.newProject().post('', { resourceType: 'Bundle', type: 'batch', entry: [{ resource: patientBody() }] });
    expect(res.status).toBe(200);
    expect(res.body.entry[0].response.status).toMatch(/^400/);
    expect(res.body.entry[0].response.outcome.issue[0].expression).toEqual(['Bundle.entry[0].request']);
  });
});

describe('Bundles the base refuses', () => {
  it('refuses a Bundle without a type (400)', async () => {
    const res = await api.newProject().post('', { resourceType: 'Bundle', entry: [] });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Bundle.type']);
  });

  it('refuses a searchset Bundle (400)', async () => {
    expect((await api.newProject().post('', { resourceType: 'Bundle', type: 'searchset' })).status).toBe(400);
  });

  it('refuses a body that is not a Bundle (400)', async () => {
    expect((await api.newProject().post('', patientBody())).status).toBe(400);
  });

  it('refuses more entries than MAX_BUNDLE_ENTRIES (413)', async () => {
    const small = await useTestServer({ MAX_BUNDLE_ENTRIES: '2' });
    const entry = Array.from({ length: 3 }, () => ({ request: { method: 'GET', url: 'metadata' } }));
    const res = await small.newProject().post('', batch(entry));
    expect(res.status).toBe(413);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('refuses an unknown method naming the entry', async () => {
    const res = await api.newProject().post('', { resourceType: 'Bundle', type: 'transaction', entry: [{ request: { method: 'COPY', url: 'Patient' } }] });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Bundle.entry[0].request.method']);
  });
});
