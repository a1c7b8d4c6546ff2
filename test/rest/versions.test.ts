import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/** `GET /fhir/R4/$versions` (FHIR R4 http.html, CapabilityStatement/$versions): public, like metadata. */

const api = await useTestServer();

const PARAMETERS = {
  resourceType: 'Parameters',
  parameter: [
    { name: 'version', valueCode: '4.0' },
    { name: 'default', valueCode: '4.0' },
  ],
};

describe('GET $versions', () => {
  it('answers plain JSON {versions, default} to Accept: application/json, without a token', async () => {
    const res = await api.raw('/fhir/R4/$versions', { headers: { Accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('vary')).toMatch(/Accept/i);
    expect(await res.json()).toEqual({ versions: ['4.0'], default: '4.0' });
  });

  it('answers plain JSON when the client accepts anything', async () => {
    const res = await api.raw('/fhir/R4/$versions', { headers: { Accept: '*/*' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ versions: ['4.0'], default: '4.0' });
  });

  it('answers the Parameters form to Accept: application/fhir+json', async () => {
    const res = await api.raw('/fhir/R4/$versions', { headers: { Accept: 'application/fhir+json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(await res.json()).toEqual(PARAMETERS);
  });

  it('answers the Parameters form to the Accept header Medplum\'s client sends by default (FHIR JSON, then anything)', async () => {
    const res = await api.raw('/fhir/R4/$versions', { headers: { Accept: 'application/fhir+json, */*; q=0.1' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(PARAMETERS);
  });

  it('prefers the media type of higher quality: application/json over FHIR JSON of lower q', async () => {
    const res = await api.raw('/fhir/R4/$versions', { headers: { Accept: 'application/fhir+json;q=0.5, application/json' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ versions: ['4.0'], default: '4.0' });
  });

  it('answers the Parameters form to _format=json, whatever the Accept header says', async () => {
    const res = await api.raw('/fhir/R4/$versions?_format=json', { headers: { Accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(await res.json()).toEqual(PARAMETERS);
  });

  it('answers the Parameters form to _format=application/fhir+json', async () => {
    const res = await api.raw(`/fhir/R4/$versions?_format=${encodeURIComponent('application/fhir+json')}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(PARAMETERS);
  });

  it('refuses XML with 406 and an OperationOutcome, as every FHIR route does', async () => {
    const res = await api.raw('/fhir/R4/$versions', { headers: { Accept: 'application/fhir+xml' } });
    expect(res.status).toBe(406);
    const body = (await res.json()) as { resourceType: string; issue: { code: string }[] };
    expect(body.resourceType).toBe('OperationOutcome');
    expect(body.issue[0].code).toBe('not-supported');
  });

  it('answers a caller with a token the same', async () => {
    const project = api.newProject();
    const res = await project.get('/$versions', { Accept: 'application/json' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ versions: ['4.0'], default: '4.0' });
  });

  it('is served by GET only: POST $versions is not an operation of this server', async () => {
    const project = api.newProject();
    const res = await project.post('/$versions', { resourceType: 'Parameters' });
    expect(res.status).toBe(404);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });
});
