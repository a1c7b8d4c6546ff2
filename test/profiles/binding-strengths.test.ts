import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { constraintOn, storeProfile, texts } from './helpers.js';

/**
 * Bindings a profile adds beyond required Coding/CodeableConcept ones: a required binding on a
 * bare `code` element to a value set only the terminology tables expand, and extensible and
 * preferred bindings, which are warnings in `$validate` and never refuse a write.
 */

const api = await useTestServer();

const LANGUAGES = 'https://example.org/fhir/CodeSystem/house-languages';
const LAB = 'https://example.org/fhir/CodeSystem/lab-tests';

/** A project CodeSystem and a ValueSet of some of its codes; returns the value set's url. */
async function projectValueSet(client: ProjectClient, system: string, codes: string[], listed: string[]): Promise<string> {
  const codeSystem = await client.post('/CodeSystem', { resourceType: 'CodeSystem', url: system, status: 'active', content: 'complete', concept: codes.map((code) => ({ code })) });
  expect(codeSystem.status, codeSystem.text).toBe(201);
  const url = `https://example.org/fhir/ValueSet/${randomUUID()}`;
  const valueSet = await client.post('/ValueSet', { resourceType: 'ValueSet', url, status: 'active', compose: { include: [{ system, concept: listed.map((code) => ({ code })) }] } });
  expect(valueSet.status, valueSet.text).toBe(201);
  return url;
}

/** A profile binding one element of `type` to a value set with a strength. */
function bindingProfile(client: ProjectClient, type: string, path: string, strength: string, valueSet: string): Promise<string> {
  const url = `https://example.org/fhir/StructureDefinition/bound-${randomUUID()}`;
  return storeProfile(client, constraintOn(type, url, [{ id: path, path, binding: { strength, valueSet } }]));
}

async function languageProfile(client: ProjectClient): Promise<string> {
  const valueSet = await projectValueSet(client, LANGUAGES, ['en', 'fr', 'de'], ['en', 'fr']);
  return bindingProfile(client, 'Patient', 'Patient.language', 'required', valueSet);
}

describe('a required binding a profile puts on a bare code, to a project value set', () => {
  it('accepts a write whose code is in the value set', async () => {
    const client = api.newProject();
    const url = await languageProfile(client);
    const res = await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, language: 'fr' });
    expect(res.status, res.text).toBe(201);
  });

  it('refuses a write whose code is not in the value set, naming the element and the profile', async () => {
    const client = api.newProject();
    const url = await languageProfile(client);
    const res = await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, language: 'de' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ severity: 'error', code: 'code-invalid', expression: ['Patient.language'] });
    expect(texts(res.body)[0]).toContain('The code "de" is not in the value set');
    expect(texts(res.body)[0]).toContain(`(profile ${url}, rule: required binding)`);
  });

  it('is reported by $validate as the same error', async () => {
    const client = api.newProject();
    const url = await languageProfile(client);
    const res = await client.post('/Patient/$validate', { resourceType: 'Patient', meta: { profile: [url] }, language: 'de' });
    expect(res.status).toBe(200);
    const errors = res.body.issue.filter((found: { severity: string }) => found.severity === 'error');
    expect(errors.map((found: { expression: string[] }) => found.expression)).toEqual([['Patient.language']]);
  });
});

describe('extensible and preferred bindings a profile adds', () => {
  it('never refuse a write with a code outside the value set', async () => {
    const client = api.newProject();
    const valueSet = await projectValueSet(client, LAB, ['hb', 'wbc', 'crp'], ['hb', 'wbc']);
    const url = await bindingProfile(client, 'Observation', 'Observation.code', 'extensible', valueSet);
    const res = await client.post('/Observation', { resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { coding: [{ system: LAB, code: 'crp' }] } });
    expect(res.status, res.text).toBe(201);
  });

  it('give a warning in $validate for a code outside a project value set (extensible)', async () => {
    const client = api.newProject();
    const valueSet = await projectValueSet(client, LAB, ['hb', 'wbc', 'crp'], ['hb', 'wbc']);
    const url = await bindingProfile(client, 'Observation', 'Observation.code', 'extensible', valueSet);
    const res = await client.post('/Observation/$validate', { resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { coding: [{ system: LAB, code: 'crp' }] } });
    expect(res.status).toBe(200);
    const warned = res.body.issue.filter((found: { severity: string; code: string }) => found.severity === 'warning' && found.code === 'code-invalid');
    expect(warned).toHaveLength(1);
    expect(warned[0].expression).toEqual(['Observation.code']);
    expect(warned[0].details.text).toContain(`(profile ${url}, rule: extensible binding)`);
    expect(res.body.issue.some((found: { severity: string }) => found.severity === 'error')).toBe(false);
  });

  it('give no warning for a code in the value set', async () => {
    const client = api.newProject();
    const valueSet = await projectValueSet(client, LAB, ['hb', 'wbc', 'crp'], ['hb', 'wbc']);
    const url = await bindingProfile(client, 'Observation', 'Observation.code', 'extensible', valueSet);
    const res = await client.post('/Observation/$validate', { resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { coding: [{ system: LAB, code: 'hb' }] } });
    expect(res.body.issue).toEqual([expect.objectContaining({ severity: 'information', details: { text: 'All OK' } })]);
  });

  it('give a warning in $validate for a code outside a shipped value set (preferred), and none on write', async () => {
    const client = api.newProject();
    const url = await bindingProfile(client, 'Patient', 'Patient.maritalStatus', 'preferred', 'http://hl7.org/fhir/ValueSet/administrative-gender');
    const patient = { resourceType: 'Patient', meta: { profile: [url] }, maritalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'M' }] } };
    const written = await client.post('/Patient', patient);
    expect(written.status, written.text).toBe(201);
    const res = await client.post('/Patient/$validate', patient);
    const warned = res.body.issue.filter((found: { severity: string }) => found.severity === 'warning');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ code: 'code-invalid', expression: ['Patient.maritalStatus'] });
    expect(warned[0].details.text).toContain('rule: preferred binding of Patient.maritalStatus');
  });
});
