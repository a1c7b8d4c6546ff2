import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, observation } from './resource-helpers.js';

const api = await useTestServer();

type Json = any;

/** POST a query to `/fhir/R4/<Type>/<id>/$graphql` as `client`. */
async function instanceQuery(
  client: ProjectClient,
  path: string,
  query: string,
  accept = 'application/json',
): Promise<{ status: number; body: Json }> {
  const res = await api.raw(`/fhir/R4/${path}/$graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: accept, ...(await client.authHeaders()) },
    body: JSON.stringify({ query }),
  });
  return { status: res.status, body: await res.json() };
}

describe('instance-level $graphql', () => {
  it('runs the query with the resource as its root', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody({ active: true, identifier: [{ system: 'urn:mrn', value: '42' }] }));
    const res = await instanceQuery(client, `Patient/${patient.id}`, '{ id identifier { system value } active }');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { id: patient.id, identifier: [{ system: 'urn:mrn', value: '42' }], active: true } });
  });

  it('answers a GET with the query in the URL', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody({ gender: 'female' }));
    const query = encodeURIComponent('{ gender birthDate }');
    const res = await api.raw(`/fhir/R4/Patient/${patient.id}/$graphql?query=${query}`, {
      headers: { Accept: 'application/json', ...(await client.authHeaders()) },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { gender: 'female', birthDate: '1974-12-25' } });
  });

  it("resolves the resource's references and reverse references", async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody({ name: [{ family: 'Root' }] }));
    const obs = await create(client, observation(`Patient/${patient.id}`));
    const fromObservation = await instanceQuery(
      client,
      `Observation/${obs.id}`,
      '{ subject { reference resource { ... on Patient { name { family } } } } }',
    );
    expect(fromObservation.body).toEqual({
      data: { subject: { reference: `Patient/${patient.id}`, resource: { name: [{ family: 'Root' }] } } },
    });
    const fromPatient = await instanceQuery(client, `Patient/${patient.id}`, '{ ObservationList(_reference: subject) { id } }');
    expect(fromPatient.body).toEqual({ data: { ObservationList: [{ id: obs.id }] } });
  });

  it('offers only the resource type\'s fields: no search or system fields at the root', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const query = `{ Patient(id: "${patient.id}") { id } health { ok } }`;
    const res = await instanceQuery(client, `Patient/${patient.id}`, query, 'application/graphql-response+json');
    expect(res.status).toBe(400);
    expect(res.body.errors.map((error: { message: string }) => error.message)).toEqual([
      'Cannot query field "Patient" on type "Patient".',
      'Cannot query field "health" on type "Patient".',
    ]);
  });

  it('refuses mutations', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const res = await instanceQuery(
      client,
      `Patient/${patient.id}`,
      `mutation { PatientDelete(id: "${patient.id}") { id } }`,
    );
    expect(res.body.data ?? null).toBeNull();
    expect(res.body.errors[0].message).toBe('Schema is not configured to execute mutation operation.');
    expect((await client.get(`/Patient/${patient.id}`)).status).toBe(200);
  });

  it('answers 404 with the OperationOutcome when the resource does not exist', async () => {
    const client = api.newProject();
    const res = await instanceQuery(client, 'Patient/does-not-exist', '{ id }');
    expect(res.status).toBe(404);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].extensions.resource.issue[0].code).toBe('not-found');
  });

  it("does not show another project's resource", async () => {
    const patient = await create(api.newProject(), patientBody({ active: true }));
    const res = await instanceQuery(api.newProject(), `Patient/${patient.id}`, '{ id active }');
    expect(res.status).toBe(404);
    expect(res.body.data).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toContain('"active":true');
  });

  it('answers an unknown resource type like REST does', async () => {
    const client = api.newProject();
    const res = await instanceQuery(client, 'Nonsense/1', '{ id }');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'not-supported' }] });
  });

  it('needs a bearer token', async () => {
    const patient = await create(api.newProject(), patientBody());
    const res = await api.raw(`/fhir/R4/Patient/${patient.id}/$graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query: '{ id }' }),
    });
    expect(res.status).toBe(401);
    expect(JSON.stringify(await res.json())).not.toContain(patient.id);
  });

  it('applies the FHIR directives and the query limits of the system endpoint', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody({ name: [{ family: 'A', given: ['B'] }, { family: 'C' }] }));
    const flattened = await instanceQuery(client, `Patient/${patient.id}`, '{ name @flatten { family } }');
    expect(flattened.body).toEqual({ data: { family: ['A', 'C'] } });
    const tooMany = await instanceQuery(client, `Patient/${patient.id}`, '{ name(_count: 100000) { family } }');
    expect(tooMany.body.errors[0].extensions.resource.issue[0].code).toBe('too-costly');
  });

  it('leaves the system endpoint as it was after an instance-level request', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody({ active: true }));
    await instanceQuery(client, `Patient/${patient.id}`, '{ active }');
    const res = await api.raw('/fhir/R4/$graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
      body: JSON.stringify({ query: `{ Patient(id: "${patient.id}") { active } }` }),
    });
    expect(await res.json()).toEqual({ data: { Patient: { active: true } } });
  });

  it('serves GraphiQL to a browser at the instance path', async () => {
    const patient = await create(api.newProject(), patientBody());
    const res = await api.raw(`/fhir/R4/Patient/${patient.id}/$graphql`, { headers: { Accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<title>Flint GraphiQL</title>');
  });
});
