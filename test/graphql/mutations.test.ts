import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';
import { create, data, graphql, onlyError } from './resource-helpers.js';

const api = await useTestServer();

const CREATE = `mutation ($res: PatientInput!) { PatientCreate(res: $res) { resourceType id meta { versionId project } name { family given } gender } }`;
const UPDATE = `mutation ($id: ID!, $res: PatientInput!, $ifMatch: String) {
  PatientUpdate(id: $id, res: $res, ifMatch: $ifMatch) { id meta { versionId } name { family } gender }
}`;

describe('TCreate', () => {
  it('creates the resource as REST does: server id and meta, readable over REST', async () => {
    const client = api.newProject();
    const body = await data(api, client, CREATE, { res: { name: [{ family: 'Chalmers', given: ['Peter'] }], gender: 'male' } });
    const created = body.PatientCreate;
    expect(created).toMatchObject({ resourceType: 'Patient', name: [{ family: 'Chalmers', given: ['Peter'] }], gender: 'male' });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.meta.project).toBe(client.projectId);

    const rest = await client.get(`/Patient/${created.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body.meta.versionId).toBe(created.meta.versionId);
    expect(rest.body.gender).toBe('male');
  });

  it('takes a code as a string literal and reads it back as the FHIR code (entered-in-error)', async () => {
    const client = api.newProject();
    const body = await data(
      api,
      client,
      `mutation { ObservationCreate(res: { status: "entered-in-error", code: { text: "x" } }) { id status } }`,
    );
    expect(body.ObservationCreate.status).toBe('entered-in-error');
    const rest = await client.get(`/Observation/${body.ObservationCreate.id}`);
    expect(rest.body.status).toBe('entered-in-error');
  });

  it('takes a code from a String variable, as Medplum\'s clients send it', async () => {
    const client = api.newProject();
    const body = await data(api, client, `mutation ($gender: String) { PatientCreate(res: { gender: $gender }) { id gender } }`, { gender: 'male' });
    expect(body.PatientCreate.gender).toBe('male');
    expect((await client.get(`/Patient/${body.PatientCreate.id}`)).body.gender).toBe('male');
  });

  it('refuses a code outside the required binding with an error naming the element, and stores nothing', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, `mutation { PatientCreate(res: { gender: "mail" }) { id } }`);
    expect(res.body.data).toEqual({ PatientCreate: null });
    const error = onlyError(res);
    expect(error.code).toBe('code-invalid');
    expect(error.outcome.issue[0].expression).toEqual(['Patient.gender']);
    expect((await client.get('/Patient')).body.entry ?? []).toEqual([]);
  });

  it('refuses a code that is no GraphQL value name (an enum literal) before running anything', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, `mutation { PatientCreate(res: { gender: male }) { id } }`);
    expect(res.body.errors?.[0]?.message).toMatch(/String cannot represent a non string value: male/);
    expect((await client.get('/Patient')).body.entry ?? []).toEqual([]);
  });

  it('drops explicit nulls from the input', async () => {
    const client = api.newProject();
    const body = await data(api, client, CREATE, { res: { name: [{ family: 'Null', given: null }], gender: null, birthDate: null } });
    const rest = await client.get(`/Patient/${body.PatientCreate.id}`);
    expect(rest.body.name).toEqual([{ family: 'Null' }]);
    expect(rest.body).not.toHaveProperty('gender');
    expect(rest.body).not.toHaveProperty('birthDate');
  });

  it('refuses an invalid resource with the validation OperationOutcome, and stores nothing', async () => {
    const client = api.newProject();
    const rest = await client.post('/Patient', { resourceType: 'Patient', birthDate: 'yesterday' });
    expect(rest.status).toBe(400);
    const res = await graphql(api, client, CREATE, { res: { birthDate: 'yesterday' } });
    expect(res.body.data).toEqual({ PatientCreate: null });
    expect(onlyError(res).outcome).toEqual(rest.body);
    expect((await client.get('/Patient')).body.entry ?? []).toEqual([]);
  });
});

describe('TUpdate', () => {
  it('writes a new version, as a REST PUT does', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const body = await data(api, client, UPDATE, { id: patient.id, res: { id: patient.id, name: [{ family: 'Renamed' }], gender: 'female' } });
    expect(body.PatientUpdate).toMatchObject({ id: patient.id, name: [{ family: 'Renamed' }], gender: 'female' });
    expect(body.PatientUpdate.meta.versionId).not.toBe(patient.meta.versionId);
    const history = await client.get(`/Patient/${patient.id}/_history`);
    expect(history.body.entry).toHaveLength(2);
  });

  it('takes the id from the argument when the input has none', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const body = await data(api, client, UPDATE, { id: patient.id, res: { name: [{ family: 'NoIdInBody' }] } });
    expect(body.PatientUpdate).toMatchObject({ id: patient.id, name: [{ family: 'NoIdInBody' }] });
  });

  it('refuses an input id that differs from the argument', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const error = onlyError(await graphql(api, client, UPDATE, { id: patient.id, res: { id: 'other', gender: 'female' } }));
    expect(error.code).toBe('invalid');
  });

  it('applies ifMatch: the current version succeeds', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const body = await data(api, client, UPDATE, { id: patient.id, res: { gender: 'other' }, ifMatch: `W/"${patient.meta.versionId}"` });
    expect(body.PatientUpdate.gender).toBe('other');
  });

  it('applies ifMatch: a stale version is a conflict and changes nothing', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    await data(api, client, UPDATE, { id: patient.id, res: { gender: 'other' } });
    const rest = await client.put(`/Patient/${patient.id}`, { ...patient, gender: 'unknown' }, { 'If-Match': `W/"${patient.meta.versionId}"` });
    expect(rest.status).toBe(412);

    const res = await graphql(api, client, UPDATE, { id: patient.id, res: { gender: 'female' }, ifMatch: patient.meta.versionId });
    expect(res.body.data).toEqual({ PatientUpdate: null });
    const error = onlyError(res);
    expect(error.code).toBe(rest.body.issue[0].code);
    expect((await client.get(`/Patient/${patient.id}`)).body.gender).toBe('other');
  });

  it('refuses invalid content with the validation OperationOutcome', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const rest = await client.put(`/Patient/${patient.id}`, { resourceType: 'Patient', id: patient.id, birthDate: '31/12/2000' });
    expect(rest.status).toBe(400);
    const error = onlyError(await graphql(api, client, UPDATE, { id: patient.id, res: { birthDate: '31/12/2000' } }));
    expect(error.outcome).toEqual(rest.body);
    expect((await client.get(`/Patient/${patient.id}`)).body.birthDate).toBe(patient.birthDate);
  });
});

describe('TDelete', () => {
  it('deletes: an information OperationOutcome, then REST reads give 410', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const body = await data(api, client, `mutation ($id: ID!) { PatientDelete(id: $id) { resourceType issue { severity code details { text } } } }`, {
      id: patient.id,
    });
    expect(body.PatientDelete).toEqual({
      resourceType: 'OperationOutcome',
      issue: [{ severity: 'information', code: 'informational', details: { text: `Deleted Patient/${patient.id}` } }],
    });
    expect((await client.get(`/Patient/${patient.id}`)).status).toBe(410);
  });

  it('reports a missing resource as not found', async () => {
    const client = api.newProject();
    const error = onlyError(await graphql(api, client, `mutation { PatientDelete(id: "missing") { id } }`));
    expect(error.code).toBe('not-found');
  });
});
