import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { constraintOn, storeProfile, texts } from './helpers.js';

/** Required bindings a profile adds to value sets the project stores, judged by the terminology engine. */

const api = await useTestServer();

const LAB = 'https://example.org/fhir/CodeSystem/lab-tests';

/** Stores a CodeSystem, a ValueSet of two of its codes, and a profile binding Observation.code to it (required). */
async function labProfile(client: ProjectClient, include: Record<string, unknown> = { system: LAB, concept: [{ code: 'hb' }, { code: 'wbc' }] }): Promise<string> {
  const codeSystem = await client.post('/CodeSystem', { resourceType: 'CodeSystem', url: LAB, status: 'active', content: 'complete', concept: [{ code: 'hb' }, { code: 'wbc' }, { code: 'crp' }] });
  expect(codeSystem.status, codeSystem.text).toBe(201);
  const valueSetUrl = `https://example.org/fhir/ValueSet/blood-count-${randomUUID()}`;
  const valueSet = await client.post('/ValueSet', { resourceType: 'ValueSet', url: valueSetUrl, status: 'active', compose: { include: [include] } });
  expect(valueSet.status, valueSet.text).toBe(201);
  const url = `https://example.org/fhir/StructureDefinition/blood-count-${randomUUID()}`;
  return storeProfile(client, constraintOn('Observation', url, [{ id: 'Observation.code', path: 'Observation.code', binding: { strength: 'required', valueSet: valueSetUrl } }]));
}

function observation(profile: string, code: string, system = LAB): Record<string, unknown> {
  return { resourceType: 'Observation', meta: { profile: [profile] }, status: 'final', code: { coding: [{ system, code }] } };
}

describe('a required binding a profile adds to a project value set', () => {
  it('accepts a write whose code is in the value set', async () => {
    const client = api.newProject();
    const url = await labProfile(client);
    const res = await client.post('/Observation', observation(url, 'hb'));
    expect(res.status, res.text).toBe(201);
  });

  it('refuses a write whose code is not in the value set, naming the element and the profile', async () => {
    const client = api.newProject();
    const url = await labProfile(client);
    const res = await client.post('/Observation', observation(url, 'crp'));
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ severity: 'error', code: 'code-invalid', expression: ['Observation.code'] });
    expect(texts(res.body)[0]).toContain(`The code ${LAB}|crp is not in the value set`);
    expect(texts(res.body)[0]).toContain(`(profile ${url}, rule: required binding)`);
  });

  it('is reported by $validate as the same error, nothing stored', async () => {
    const client = api.newProject();
    const url = await labProfile(client);
    const res = await client.post('/Observation/$validate', observation(url, 'crp'));
    expect(res.status).toBe(200);
    const errors = res.body.issue.filter((found: { severity: string }) => found.severity === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].expression).toEqual(['Observation.code']);
    expect((await client.get('/Observation')).body.entry ?? []).toHaveLength(0);
  });

  it('never refuses a write when the value set cannot be expanded, and $validate says it was not checked', async () => {
    const client = api.newProject();
    const url = await labProfile(client, { valueSet: ['https://example.org/fhir/ValueSet/not-stored'] });
    const written = await client.post('/Observation', observation(url, '38341003', 'http://snomed.info/sct'));
    expect(written.status, written.text).toBe(201);
    const validated = await client.post('/Observation/$validate', observation(url, '38341003', 'http://snomed.info/sct'));
    expect(validated.body.issue).toContainEqual(expect.objectContaining({ severity: 'information', expression: ['Observation.code'] }));
  });

  it('never refuses a code of a code system Flint does not hold (SNOMED CT filtered by is-a)', async () => {
    const client = api.newProject();
    const url = await labProfile(client, { system: 'http://snomed.info/sct', filter: [{ property: 'concept', op: 'is-a', value: '404684003' }] });
    const written = await client.post('/Observation', observation(url, '38341003', 'http://snomed.info/sct'));
    expect(written.status, written.text).toBe(201);
  });

  it('does not apply to a resource that does not claim the profile', async () => {
    const client = api.newProject();
    await labProfile(client);
    const res = await client.post('/Observation', { resourceType: 'Observation', status: 'final', code: { coding: [{ system: LAB, code: 'crp' }] } });
    expect(res.status, res.text).toBe(201);
  });
});
