import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { BIRTH_PLACE, BODY_WEIGHT, patientProfile, storeProfile } from './helpers.js';

/** `StructureDefinition/$expand-profile` (Medplum's operation): the profile with its snapshot and the definitions it uses. */

const api = await useTestServer();

interface Entry {
  fullUrl: string;
  resource: { resourceType: string; url: string; id?: string; snapshot?: { element: { id: string }[] } };
}

describe('StructureDefinition/$expand-profile', () => {
  it('answers a project profile with its snapshot, then the extension definitions it names (GET)', async () => {
    const client = api.newProject();
    const stored = (await client.post('/StructureDefinition', patientProfile())).body;
    const res = await client.get(`/StructureDefinition/$expand-profile?url=${encodeURIComponent(stored.url)}`);
    expect(res.status).toBe(200);
    expect(res.body.resourceType).toBe('Bundle');
    expect(res.body.type).toBe('searchset');
    const entries = res.body.entry as Entry[];
    expect(entries.map((entry) => entry.resource.url)).toEqual([stored.url, BIRTH_PLACE]);
    expect(entries[0].fullUrl).toMatch(new RegExp(`/fhir/R4/StructureDefinition/${stored.id}$`));
    expect(entries[0].resource.snapshot!.element.map((element) => element.id)).toContain('Patient.identifier:mrn.system');
    expect(entries[1].resource.snapshot!.element[0].id).toBe('Extension');
  });

  it('takes the url from a Parameters body too (POST)', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post('/StructureDefinition/$expand-profile', { resourceType: 'Parameters', parameter: [{ name: 'url', valueUri: url }] });
    expect(res.status).toBe(200);
    expect(res.body.entry[0].resource.url).toBe(url);
  });

  it('takes the url from the query string of a POST', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post(`/StructureDefinition/$expand-profile?url=${encodeURIComponent(url)}`, { resourceType: 'Parameters' });
    expect(res.status).toBe(200);
    expect(res.body.entry[0].resource.url).toBe(url);
  });

  it('answers a shipped HL7 profile', async () => {
    const res = await api.newProject().get(`/StructureDefinition/$expand-profile?url=${encodeURIComponent(BODY_WEIGHT)}`);
    expect(res.status).toBe(200);
    expect(res.body.entry[0].fullUrl).toBe(BODY_WEIGHT);
    expect(res.body.entry[0].resource.snapshot.element.map((element: { id: string }) => element.id)).toContain('Observation.code.coding:BodyWeightCode');
  });

  it('answers 404 with an OperationOutcome for an unknown url', async () => {
    const res = await api.newProject().get('/StructureDefinition/$expand-profile?url=https://example.org/fhir/StructureDefinition/none');
    expect(res.status).toBe(404);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('not-found');
    expect(res.body.issue[0].details.text).toContain('https://example.org/fhir/StructureDefinition/none');
  });

  it('answers 400 without a url', async () => {
    const res = await api.newProject().get('/StructureDefinition/$expand-profile');
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('is a GraphQL field answering the same Bundle', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await api.raw('/fhir/R4/$graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
      body: JSON.stringify({ query: 'query($url: String) { StructureDefinitionExpandProfile(url: $url) { type entry { resource { ... on StructureDefinition { url } } } } }', variables: { url } }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { StructureDefinitionExpandProfile: { type: string; entry: { resource: { url: string } }[] } } };
    expect(body.data.StructureDefinitionExpandProfile.type).toBe('searchset');
    expect(body.data.StructureDefinitionExpandProfile.entry.map((entry) => entry.resource.url)).toEqual([url, BIRTH_PLACE]);
  });

  it('generates the same snapshot as a write stores', async () => {
    const client = api.newProject();
    const stored = (await client.post('/StructureDefinition', patientProfile())).body;
    const expanded = await client.get(`/StructureDefinition/$expand-profile?url=${encodeURIComponent(stored.url)}`);
    expect(expanded.body.entry[0].resource.snapshot).toEqual(stored.snapshot);
  });
});
