import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { BODY_WEIGHT, bodyWeight, constraintOn, storeProfile, texts } from './helpers.js';

/** Slicing rules beyond open and closed: ordered, openAtEnd, and the exists, type and profile discriminators. */

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

  it('profile: sorts Bundle entries by whether their resource conforms to the slice’s profile', async () => {
    const client = api.newProject();
    const url = await storeProfile(
      client,
      constraintOn('Bundle', `https://example.org/fhir/StructureDefinition/weights-${randomUUID()}`, [
        { id: 'Bundle.entry', path: 'Bundle.entry', slicing: { discriminator: [{ type: 'profile', path: 'resource' }], rules: 'closed' } },
        { id: 'Bundle.entry:weight', path: 'Bundle.entry', sliceName: 'weight', min: 1 },
        { id: 'Bundle.entry:weight.resource', path: 'Bundle.entry.resource', type: [{ code: 'Observation', profile: [BODY_WEIGHT] }] },
      ]),
    );
    const bundle = (resource: Record<string, unknown>) => ({ resourceType: 'Bundle', meta: { profile: [url] }, type: 'collection', entry: [{ resource }] });
    const { meta: _meta, ...weight } = bodyWeight();
    expect((await client.post('/Bundle', bundle(weight))).status).toBe(201);
    const res = await client.post('/Bundle', bundle({ ...weight, code: { coding: [{ system: 'http://loinc.org', code: '8302-2' }] } }));
    expect(res.status).toBe(400);
    expect(texts(res.body).some((text) => text.includes('closed slicing of Bundle.entry'))).toBe(true);
  });

  it('type: sorts the values of a choice by their type', async () => {
    const client = api.newProject();
    const url = await storeProfile(
      client,
      constraintOn('Observation', `https://example.org/fhir/StructureDefinition/quantity-only-${randomUUID()}`, [
        { id: 'Observation.value[x]', path: 'Observation.value[x]', slicing: { discriminator: [{ type: 'type', path: '$this' }], rules: 'closed' } },
        { id: 'Observation.value[x]:valueQuantity', path: 'Observation.value[x]', sliceName: 'valueQuantity', type: [{ code: 'Quantity' }] },
      ]),
    );
    const observation = (value: Record<string, unknown>) => ({ resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { text: 'weight' }, ...value });
    expect((await client.post('/Observation', observation({ valueQuantity: { value: 72 } }))).status).toBe(201);
    expect((await client.post('/Observation', observation({ valueString: 'heavy' }))).status).toBe(400);
  });
});
