import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { bodyWeight, constraintOn, storeProfile, texts } from './helpers.js';

/**
 * Profile rules the walk applies below what a profile lists: constraints inside slices, values
 * narrowed to a data type profile, and extensions on elements the profile does not list.
 */

const api = await useTestServer();

const OWN_PREFIX = 'http://hl7.org/fhir/StructureDefinition/humanname-own-prefix';

/** A Patient profile slicing names by `use`, whose official slice requires a family name by a constraint. */
async function officialNameProfile(client: ProjectClient, severity: 'error' | 'warning'): Promise<string> {
  const url = `https://example.org/fhir/StructureDefinition/official-name-${randomUUID()}`;
  return storeProfile(
    client,
    constraintOn('Patient', url, [
      { id: 'Patient.name', path: 'Patient.name', slicing: { discriminator: [{ type: 'value', path: 'use' }], rules: 'open' } },
      {
        id: 'Patient.name:official',
        path: 'Patient.name',
        sliceName: 'official',
        min: 0,
        max: '1',
        constraint: [{ key: 'off-1', severity, human: 'An official name has a family name', expression: 'family.exists()', source: url }],
      },
      { id: 'Patient.name:official.use', path: 'Patient.name.use', fixedCode: 'official' },
    ]),
  );
}

function patient(url: string, name: Record<string, unknown>[]): Record<string, unknown> {
  return { resourceType: 'Patient', meta: { profile: [url] }, name };
}

describe('constraints inside slices', () => {
  it('refuses a slice member that breaks the slice’s constraint, naming the key and the value', async () => {
    const client = api.newProject();
    const url = await officialNameProfile(client, 'error');
    const res = await client.post('/Patient', patient(url, [{ use: 'nickname', given: ['Jo'] }, { use: 'official', given: ['Joanna'] }]));
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue.map((found: { code: string; expression: string[] }) => [found.code, found.expression])).toEqual([['invariant', ['Patient.name[1]']]]);
    expect(texts(res.body)).toEqual([`off-1: An official name has a family name (profile ${url})`]);
  });

  it('does not apply the slice’s constraint to values of other slices or none', async () => {
    const client = api.newProject();
    const url = await officialNameProfile(client, 'error');
    const res = await client.post('/Patient', patient(url, [{ use: 'nickname', given: ['Jo'] }, { use: 'official', family: 'Jones' }]));
    expect(res.status, res.text).toBe(201);
  });

  it('reports a broken warning constraint of a slice in $validate only', async () => {
    const client = api.newProject();
    const url = await officialNameProfile(client, 'warning');
    const resource = patient(url, [{ use: 'official', given: ['Joanna'] }]);
    expect((await client.post('/Patient', resource)).status).toBe(201);
    const res = await client.post('/Patient/$validate', resource);
    expect(res.status).toBe(200);
    expect(res.body.issue).toContainEqual(
      expect.objectContaining({ severity: 'warning', code: 'invariant', expression: ['Patient.name[0]'], details: { text: `off-1: An official name has a family name (profile ${url})` } }),
    );
  });
});

describe('data type profiles', () => {
  it('checks a Quantity the profile narrows to SimpleQuantity against it (sqty-1: no comparator)', async () => {
    const client = api.newProject();
    const url = await storeProfile(
      client,
      constraintOn('Observation', `https://example.org/fhir/StructureDefinition/simple-value-${randomUUID()}`, [
        { id: 'Observation.value[x]', path: 'Observation.value[x]', type: [{ code: 'Quantity', profile: ['http://hl7.org/fhir/StructureDefinition/SimpleQuantity'] }] },
      ]),
    );
    const observation = (comparator?: string) => ({
      ...bodyWeight({ meta: { profile: [url] } }),
      valueQuantity: { value: 72, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg', ...(comparator ? { comparator } : {}) },
    });
    expect((await client.post('/Observation', observation())).status).toBe(201);
    const res = await client.post('/Observation', observation('<'));
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Observation.valueQuantity']);
    expect(texts(res.body)[0]).toMatch(/^sqty-1: .*\(profile http:\/\/hl7\.org\/fhir\/StructureDefinition\/SimpleQuantity\)$/);
  });
});

describe('extensions on elements the profile does not list', () => {
  it('checks them against their definition when the resource claims a profile', async () => {
    const client = api.newProject();
    const url = await storeProfile(client, constraintOn('Patient', `https://example.org/fhir/StructureDefinition/named-${randomUUID()}`, [{ id: 'Patient.name', path: 'Patient.name', min: 1 }]));
    const withPrefix = (value: Record<string, unknown>) => [{ family: 'Jones', _family: { extension: [{ url: OWN_PREFIX, ...value }] } }];
    expect((await client.post('/Patient', patient(url, withPrefix({ valueString: 'van' })))).status).toBe(201);
    const res = await client.post('/Patient', patient(url, withPrefix({ valueBoolean: true })));
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].expression[0]).toMatch(/^Patient\.name\[0\]\._family\.extension\[0\]\.value/);
    expect(texts(res.body)[0]).toContain(`profile ${OWN_PREFIX}`);
  });

  it('leaves them to the structural check when the resource claims no profile', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Jones', _family: { extension: [{ url: OWN_PREFIX, valueBoolean: true }] } }] });
    expect(res.status, res.text).toBe(201);
  });
});
