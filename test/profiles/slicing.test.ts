import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { constraintOn, storeProfile, texts } from './helpers.js';

/** Slicing rules beyond open and closed: ordered, openAtEnd, and the exists discriminator. */

const api = await useTestServer();

/** A Patient profile whose only rules are the given differential elements (after the root). */
function patientProfileWith(client: ProjectClient, elements: Record<string, unknown>[]): Promise<string> {
  return storeProfile(client, constraintOn('Patient', `https://example.org/fhir/StructureDefinition/sliced-patient-${randomUUID()}`, elements));
}

/** Names sliced by `use`: official first, then maiden. */
function nameSlices(rules: string, ordered: boolean): Record<string, unknown>[] {
  return [
    { id: 'Patient.name', path: 'Patient.name', slicing: { discriminator: [{ type: 'value', path: 'use' }], ordered, rules } },
    { id: 'Patient.name:official', path: 'Patient.name', sliceName: 'official', min: 0, max: '1' },
    { id: 'Patient.name:official.use', path: 'Patient.name.use', fixedCode: 'official' },
    { id: 'Patient.name:maiden', path: 'Patient.name', sliceName: 'maiden', min: 0, max: '1' },
    { id: 'Patient.name:maiden.use', path: 'Patient.name.use', fixedCode: 'maiden' },
  ];
}

const official = { use: 'official', family: 'Jones' };
const maiden = { use: 'maiden', family: 'Smith' };
const nickname = { use: 'nickname', given: ['Jo'] };

describe('slicing', () => {
  it('ordered: refuses values of a later slice before those of an earlier one', async () => {
    const client = api.newProject();
    const url = await patientProfileWith(client, nameSlices('open', true));
    expect((await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, name: [official, maiden] })).status).toBe(201);
    const res = await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, name: [maiden, official] });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Patient.name[1]']);
    expect(res.body.issue[0].details.text).toContain('rule: ordered slicing of Patient.name');
  });

  it('unordered: accepts the slices in any order', async () => {
    const client = api.newProject();
    const url = await patientProfileWith(client, nameSlices('open', false));
    expect((await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, name: [maiden, official] })).status).toBe(201);
  });

  it('openAtEnd: accepts other values after the slices and refuses them before', async () => {
    const client = api.newProject();
    const url = await patientProfileWith(client, nameSlices('openAtEnd', false));
    expect((await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, name: [official, nickname] })).status).toBe(201);
    const res = await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, name: [nickname, official] });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Patient.name[1]']);
    expect(res.body.issue[0].details.text).toContain('rule: openAtEnd slicing of Patient.name');
  });

  it('exists: sorts values by whether an element is present', async () => {
    const client = api.newProject();
    const url = await patientProfileWith(client, [
      { id: 'Patient.telecom', path: 'Patient.telecom', slicing: { discriminator: [{ type: 'exists', path: 'period' }], rules: 'open' } },
      { id: 'Patient.telecom:current', path: 'Patient.telecom', sliceName: 'current', min: 0, max: '1' },
      { id: 'Patient.telecom:current.period', path: 'Patient.telecom.period', max: '0' },
      { id: 'Patient.telecom:dated', path: 'Patient.telecom', sliceName: 'dated', min: 0, max: '*' },
      { id: 'Patient.telecom:dated.period', path: 'Patient.telecom.period', min: 1 },
    ]);
    const phone = (value: string, period?: Record<string, string>) => ({ system: 'phone', value, ...(period ? { period } : {}) });
    const dated = [phone('1', { start: '2020-01-01' }), phone('2', { start: '2021-01-01' })];
    expect((await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, telecom: [phone('0'), ...dated] })).status).toBe(201);
    const res = await client.post('/Patient', { resourceType: 'Patient', meta: { profile: [url] }, telecom: [phone('0'), phone('9'), ...dated] });
    expect(res.status).toBe(400);
    expect(texts(res.body)).toEqual([`Patient.telecom:current allows at most 1 value, found 2 (profile ${url}, rule: cardinality 0..1 of Patient.telecom:current)`]);
  });
});
