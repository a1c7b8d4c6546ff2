import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { constraintOn, storeProfile, texts } from './helpers.js';

/** Discriminator paths through `extension('url')` and `ofType(T)`: values sorted into slices and checked like any other. */

const api = await useTestServer();
const KIND = 'https://example.org/fhir/StructureDefinition/address-kind';
const VERIFIED = 'https://example.org/fhir/StructureDefinition/verified';

function profileOn(client: ProjectClient, type: string, elements: Record<string, unknown>[]): Promise<string> {
  return storeProfile(client, constraintOn(type, `https://example.org/fhir/StructureDefinition/paths-${randomUUID()}`, elements));
}

/** Addresses sliced by the value of their kind extension (closed): at most one home, any number of work addresses. */
function addressSlices(): Record<string, unknown>[] {
  const slice = (name: string, max: string) => [
    { id: `Patient.address:${name}`, path: 'Patient.address', sliceName: name, min: 0, max },
    { id: `Patient.address:${name}.extension`, path: 'Patient.address.extension', slicing: { discriminator: [{ type: 'value', path: 'url' }], rules: 'open' } },
    { id: `Patient.address:${name}.extension:kind`, path: 'Patient.address.extension', sliceName: 'kind', min: 1, max: '1' },
    { id: `Patient.address:${name}.extension:kind.url`, path: 'Patient.address.extension.url', fixedUri: KIND },
    { id: `Patient.address:${name}.extension:kind.value[x]`, path: 'Patient.address.extension.value[x]', type: [{ code: 'code' }], fixedCode: name },
  ];
  return [
    { id: 'Patient.address', path: 'Patient.address', slicing: { discriminator: [{ type: 'value', path: `extension('${KIND}').value` }], rules: 'closed' } },
    ...slice('home', '1'),
    ...slice('work', '*'),
  ];
}

const address = (kind: string, city: string) => ({ city, extension: [{ url: KIND, valueCode: kind }] });
const patient = (url: string, extra: Record<string, unknown>) => ({ resourceType: 'Patient', meta: { profile: [url] }, ...extra });

/** Components sliced by their value's unit when the value is a Quantity (closed): one in mmHg at most. */
function componentSlices(): Record<string, unknown>[] {
  return [
    { id: 'Observation.component', path: 'Observation.component', slicing: { discriminator: [{ type: 'value', path: 'value.ofType(Quantity).code' }], rules: 'closed' } },
    { id: 'Observation.component:pressure', path: 'Observation.component', sliceName: 'pressure', min: 0, max: '1' },
    { id: 'Observation.component:pressure.value[x]', path: 'Observation.component.value[x]', type: [{ code: 'Quantity' }] },
    { id: 'Observation.component:pressure.value[x].code', path: 'Observation.component.value[x].code', fixedCode: 'mm[Hg]' },
  ];
}

const component = (value: Record<string, unknown>) => ({ code: { text: 'pressure' }, ...value });
const mmHg = { valueQuantity: { value: 120, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } };
const observation = (url: string, components: Record<string, unknown>[]) => ({ resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { text: 'bp' }, component: components });

describe("discriminator paths with extension('url') and ofType(T)", () => {
  it("extension('url').value: accepts values sorted by their extension's value", async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Patient', addressSlices());
    const res = await client.post('/Patient', patient(url, { address: [address('home', 'Leeds'), address('work', 'York'), address('work', 'Hull')] }));
    expect(res.status).toBe(201);
  });

  it("extension('url').value: applies the cardinality of the slice the extension's value selects", async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Patient', addressSlices());
    const res = await client.post('/Patient', patient(url, { address: [address('home', 'Leeds'), address('home', 'York')] }));
    expect(res.status).toBe(400);
    expect(texts(res.body)).toEqual([`Patient.address:home allows at most 1 value, found 2 (profile ${url}, rule: cardinality 0..1 of Patient.address:home)`]);
  });

  it("extension('url').value: a closed slicing refuses a value whose extension selects no slice", async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Patient', addressSlices());
    const res = await client.post('/Patient', patient(url, { address: [address('home', 'Leeds'), { city: 'Hull' }] }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Patient.address[1]']);
    expect(texts(res.body)[0]).toContain('rule: closed slicing of Patient.address');
  });

  it("extension('url') with exists: sorts values by whether they carry the extension", async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Patient', [
      { id: 'Patient.telecom', path: 'Patient.telecom', slicing: { discriminator: [{ type: 'exists', path: `extension('${VERIFIED}')` }], rules: 'open' } },
      { id: 'Patient.telecom:verified', path: 'Patient.telecom', sliceName: 'verified', min: 0, max: '1' },
      { id: 'Patient.telecom:verified.extension', path: 'Patient.telecom.extension', slicing: { discriminator: [{ type: 'value', path: 'url' }], rules: 'open' } },
      { id: 'Patient.telecom:verified.extension:verified', path: 'Patient.telecom.extension', sliceName: 'verified', min: 1, max: '1', type: [{ code: 'Extension', profile: [VERIFIED] }] },
    ]);
    const phone = (value: string, verified: boolean) => ({ system: 'phone', value, ...(verified ? { extension: [{ url: VERIFIED, valueBoolean: true }] } : {}) });
    expect((await client.post('/Patient', patient(url, { telecom: [phone('1', true), phone('2', false), phone('3', false)] }))).status).toBe(201);
    const res = await client.post('/Patient', patient(url, { telecom: [phone('1', true), phone('2', true)] }));
    expect(res.status).toBe(400);
    expect(texts(res.body)).toEqual([`Patient.telecom:verified allows at most 1 value, found 2 (profile ${url}, rule: cardinality 0..1 of Patient.telecom:verified)`]);
  });

  it('value.ofType(Quantity).code: applies the cardinality of the slice a Quantity value selects', async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Observation', componentSlices());
    expect((await client.post('/Observation', observation(url, [component(mmHg)]))).status).toBe(201);
    const res = await client.post('/Observation', observation(url, [component(mmHg), component(mmHg)]));
    expect(res.status).toBe(400);
    expect(texts(res.body)).toEqual([`Observation.component:pressure allows at most 1 value, found 2 (profile ${url}, rule: cardinality 0..1 of Observation.component:pressure)`]);
  });

  it('value.ofType(Quantity).code: a value of another type selects no slice', async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Observation', componentSlices());
    const res = await client.post('/Observation', observation(url, [component(mmHg), component({ valueString: 'mm[Hg]' })]));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Observation.component[1]']);
    expect(texts(res.body)[0]).toContain('rule: closed slicing of Observation.component');
  });

  it("$validate reports the same issue as a write for an extension('url') slicing", async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Patient', addressSlices());
    const res = await client.post('/Patient/$validate', patient(url, { address: [address('home', 'Leeds'), address('home', 'York')] }));
    expect(res.status).toBe(200);
    expect(texts(res.body)).toContain(`Patient.address:home allows at most 1 value, found 2 (profile ${url}, rule: cardinality 0..1 of Patient.address:home)`);
  });

  it('leaves a slicing whose path uses resolve() unchecked', async () => {
    const client = api.newProject();
    const url = await profileOn(client, 'Observation', [
      { id: 'Observation.hasMember', path: 'Observation.hasMember', slicing: { discriminator: [{ type: 'profile', path: 'resolve()' }], rules: 'closed' } },
      { id: 'Observation.hasMember:none', path: 'Observation.hasMember', sliceName: 'none', min: 0, max: '0' },
    ]);
    const res = await client.post('/Observation', { resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { text: 'panel' }, hasMember: [{ reference: 'Observation/x' }] });
    expect(res.status).toBe(201);
  });
});
