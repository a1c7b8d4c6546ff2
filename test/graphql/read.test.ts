import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';
import { create, data, ENDPOINTS, graphql, onlyError } from './resource-helpers.js';

const api = await useTestServer();

const READ_PATIENT = `query ($id: ID!) {
  Patient(id: $id) { resourceType id meta { versionId project } name { family given } gender birthDate }
}`;

describe('T(id): read', () => {
  for (const endpoint of ENDPOINTS) {
    it(`returns the same resource as the REST read (${endpoint})`, async () => {
      const client = api.newProject();
      const patient = await create(client, patientBody());
      const rest = await client.get(`/Patient/${patient.id}`);

      const res = await graphql(api, client, READ_PATIENT, { id: patient.id }, endpoint);

      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.Patient).toEqual({
        resourceType: 'Patient',
        id: rest.body.id,
        meta: { versionId: rest.body.meta.versionId, project: client.projectId },
        name: rest.body.name,
        gender: rest.body.gender,
        birthDate: rest.body.birthDate,
      });
    });
  }

  it('reports a missing resource as an error with a not-found OperationOutcome, and null data', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, READ_PATIENT, { id: 'does-not-exist' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ Patient: null });
    const error = onlyError(res);
    expect(error.code).toBe('not-found');
    expect(error.path).toEqual(['Patient']);
  });

  it('reports a deleted resource as gone (deleted issue), like the REST 410', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    expect((await client.delete(`/Patient/${patient.id}`)).status).toBe(200);
    expect((await client.get(`/Patient/${patient.id}`)).status).toBe(410);

    const error = onlyError(await graphql(api, client, READ_PATIENT, { id: patient.id }));
    expect(error.code).toBe('deleted');
  });

  it('returns partial data: one failed read does not fail the other fields', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const res = await graphql(api, client, `query ($id: ID!) { found: Patient(id: $id) { id } missing: Patient(id: "nope") { id } }`, {
      id: patient.id,
    });
    expect(res.body.data).toEqual({ found: { id: patient.id }, missing: null });
    expect(onlyError(res).path).toEqual(['missing']);
  });

  it('answers a resource of another type through the Resource interface', async () => {
    const client = api.newProject();
    const org = await create(client, { resourceType: 'Organization', name: 'Acme' });
    const body = await data(api, client, `query ($id: ID!) { Organization(id: $id) { ... on Resource { resourceType id } name } }`, { id: org.id });
    expect(body.Organization).toEqual({ resourceType: 'Organization', id: org.id, name: 'Acme' });
  });

  it('returns Binary data stored beside the resource, as the REST JSON read does', async () => {
    const client = api.newProject();
    const data64 = Buffer.from('hello flint').toString('base64');
    const binary = await create(client, { resourceType: 'Binary', contentType: 'text/plain', data: data64 });
    const body = await data(api, client, `query ($id: ID!) { Binary(id: $id) { contentType data } }`, { id: binary.id });
    expect(body.Binary).toEqual({ contentType: 'text/plain', data: data64 });
  });
});

describe('list field arguments', () => {
  const withNames = patientBody({
    name: [
      { use: 'official', family: 'Chalmers', given: ['Peter', 'James'] },
      { use: 'usual', family: 'Chalmers', given: ['Jim'] },
      { use: 'maiden', family: 'Windsor', given: ['Peter'] },
    ],
    telecom: [
      { system: 'phone', value: '555-1' },
      { system: 'email', value: 'p@example.org' },
    ],
    extension: [
      { url: 'http://example.org/a', valueString: 'A' },
      { url: 'http://example.org/b', valueString: 'B' },
    ],
  });

  it('fhirpath keeps the items for which the expression is true', async () => {
    const client = api.newProject();
    const patient = await create(client, withNames);
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Patient(id: $id) {
        usual: name(fhirpath: "use = 'usual'") { given }
        email: telecom(fhirpath: "system = 'email'") { value }
        peters: name(fhirpath: "given contains 'Peter'") { use }
      } }`,
      { id: patient.id },
    );
    expect(body.Patient).toEqual({
      usual: [{ given: ['Jim'] }],
      email: [{ value: 'p@example.org' }],
      peters: [{ use: 'official' }, { use: 'maiden' }],
    });
  });

  it('_offset and _count slice the list after filtering', async () => {
    const client = api.newProject();
    const patient = await create(client, withNames);
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Patient(id: $id) {
        second: name(_offset: 1, _count: 1) { use }
        firstGiven: name(_count: 1) { given(_count: 1) }
        lastPeter: name(fhirpath: "given contains 'Peter'", _offset: 1) { use }
      } }`,
      { id: patient.id },
    );
    expect(body.Patient).toEqual({ second: [{ use: 'usual' }], firstGiven: [{ given: ['Peter'] }], lastPeter: [{ use: 'maiden' }] });
  });

  it('url keeps the extensions with that url', async () => {
    const client = api.newProject();
    const patient = await create(client, withNames);
    const body = await data(api, client, `query ($id: ID!) { Patient(id: $id) { extension(url: "http://example.org/b") { valueString } } }`, {
      id: patient.id,
    });
    expect(body.Patient.extension).toEqual([{ valueString: 'B' }]);
  });

  it('fhirpath knows the element type, so choice elements resolve', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const obs = await create(client, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'bp' },
      subject: { reference: `Patient/${patient.id}` },
      component: [
        { code: { text: 'systolic' }, valueQuantity: { value: 120, unit: 'mmHg' } },
        { code: { text: 'diastolic' }, valueQuantity: { value: 80, unit: 'mmHg' } },
      ],
    });
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Observation(id: $id) { component(fhirpath: "value.ofType(Quantity).value > 100") { code { text } } } }`,
      { id: obs.id },
    );
    expect(body.Observation.component).toEqual([{ code: { text: 'systolic' } }]);
  });

  it('reports an invalid fhirpath as an error with an OperationOutcome', async () => {
    const client = api.newProject();
    const patient = await create(client, withNames);
    const res = await graphql(api, client, `query ($id: ID!) { Patient(id: $id) { id name(fhirpath: "use = = 'x'") { use } } }`, {
      id: patient.id,
    });
    const error = onlyError(res);
    expect(error.code).toBe('invalid');
    expect(error.text).toContain('fhirpath');
    expect(res.body.data.Patient).toEqual({ id: patient.id, name: null });
  });
});
