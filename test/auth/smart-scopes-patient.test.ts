import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';
import { graphql, onlyError } from '../graphql/resource-helpers.js';
import { expectScopeRefusal, idsOf, observationOf, patientUser, scopedMember } from './smart-helpers.js';

const api = await useTestServer();

/** A Patient user, another patient, and an Observation of each. */
async function twoPatients() {
  const admin = api.newProject();
  const user = await patientUser(api, admin);
  const other = (await admin.post('/Patient', patientBody())).body;
  const mine = (await admin.post('/Observation', observationOf(user.patientId))).body;
  const theirs = (await admin.post('/Observation', observationOf(other.id))).body;
  return { admin, user, other, mine, theirs };
}

describe('SMART patient/ scopes: the launch patient compartment', () => {
  it('a search returns only the launch patient\'s resources', async () => {
    const { user, mine } = await twoPatients();
    const { client } = await user.client('patient/Observation.rs patient/Patient.rs launch/patient');
    const res = await client.get('/Observation');
    expect(res.status).toBe(200);
    expect(idsOf(res.body)).toEqual([mine.id]);
    expect(idsOf((await client.get('/Patient')).body)).toEqual([user.patientId]);
  });

  it('a read of another patient\'s resource is 404, as if it did not exist', async () => {
    const { user, mine, theirs, other } = await twoPatients();
    const { client } = await user.client('patient/*.rs launch/patient');
    expect((await client.get(`/Observation/${mine.id}`)).status).toBe(200);
    expect((await client.get(`/Observation/${theirs.id}`)).status).toBe(404);
    expect((await client.get(`/Patient/${other.id}`)).status).toBe(404);
    expect((await client.get(`/Patient/${user.patientId}`)).status).toBe(200);
  });

  it('writes only resources in the launch patient\'s compartment', async () => {
    const { user, other, mine, theirs } = await twoPatients();
    const { client } = await user.client('patient/Observation.cruds launch/patient');
    expect((await client.post('/Observation', observationOf(user.patientId))).status).toBe(201);
    const outside = await client.post('/Observation', observationOf(other.id));
    expect(outside.status).toBe(403);
    expect((await client.put(`/Observation/${mine.id}`, { ...mine, status: 'amended' })).status).toBe(200);
    // Moving one's own Observation to another patient is refused; another patient's is not found.
    expect((await client.put(`/Observation/${mine.id}`, { ...mine, subject: { reference: `Patient/${other.id}` } })).status).toBe(403);
    expect((await client.put(`/Observation/${theirs.id}`, { ...theirs, status: 'amended' })).status).toBe(404);
    expect((await client.request('DELETE', `/Observation/${theirs.id}`)).status).toBe(404);
    expect((await client.request('DELETE', `/Observation/${mine.id}`)).status).toBe(200);
  });

  it('GraphQL lists and reads see only the launch patient\'s resources', async () => {
    const { user, mine, theirs } = await twoPatients();
    const { client } = await user.client('patient/*.rs launch/patient');
    const list = await graphql(api, client, `{ ObservationList { id subject { resource { ... on Patient { id } } } } }`);
    expect(list.body.data?.ObservationList, JSON.stringify(list.body)).toEqual([{ id: mine.id, subject: { resource: { id: user.patientId } } }]);
    expect(onlyError(await graphql(api, client, `query ($id: ID!) { Observation(id: $id) { id } }`, { id: theirs.id })).code).toBe('not-found');
  });

  it('the history of a type narrowed to the patient is refused; an instance history is not', async () => {
    const { user, mine } = await twoPatients();
    const { client } = await user.client('patient/Observation.rs launch/patient');
    const res = await client.get('/Observation/_history');
    expect(res.status).toBe(403);
    expect(res.body.issue[0].details.text).toContain('per resource');
    expect((await client.get(`/Observation/${mine.id}/_history`)).status).toBe(200);
  });

  it('patient/ scopes without a patient context are refused, saying so', async () => {
    const admin = api.newProject();
    const { client } = await scopedMember(api, admin, 'patient/Observation.rs');
    const res = await client.get('/Observation');
    expectScopeRefusal(res, 'patient context');
  });

  it('a user/ scope beside a patient/ one for the same type widens to what the user/ one allows (a union)', async () => {
    const { user, mine, theirs } = await twoPatients();
    const { client } = await user.client('patient/Observation.rs user/Observation.rs launch/patient');
    expect(idsOf((await client.get('/Observation')).body)).toEqual([mine.id, theirs.id].sort());
  });
});

describe('SMART granular scopes', () => {
  async function labAndVitals() {
    const admin = api.newProject();
    const patient = (await admin.post('/Patient', patientBody())).body;
    const lab = (await admin.post('/Observation', observationOf(patient.id, 'laboratory'))).body;
    const vitals = (await admin.post('/Observation', observationOf(patient.id, 'vital-signs'))).body;
    const survey = (await admin.post('/Observation', observationOf(patient.id, 'survey'))).body;
    return { admin, patient, lab, vitals, survey };
  }

  it('narrow searches and reads to resources matching their parameters', async () => {
    const { admin, lab, vitals } = await labAndVitals();
    const { client } = await scopedMember(api, admin, 'user/Observation.rs?category=laboratory');
    expect(idsOf((await client.get('/Observation')).body)).toEqual([lab.id]);
    expect((await client.get(`/Observation/${lab.id}`)).status).toBe(200);
    expect((await client.get(`/Observation/${vitals.id}`)).status).toBe(404);
  });

  it('several granular scopes for one type are a union', async () => {
    const { admin, lab, vitals } = await labAndVitals();
    const { client } = await scopedMember(api, admin, 'user/Observation.rs?category=laboratory user/Observation.rs?category=vital-signs');
    expect(idsOf((await client.get('/Observation')).body)).toEqual([lab.id, vitals.id].sort());
  });

  it('combine with a patient context: both must hold', async () => {
    const { user, admin, mine } = await twoPatients();
    const lab = (await admin.post('/Observation', observationOf(user.patientId, 'laboratory'))).body;
    const { client } = await user.client('patient/Observation.rs?category=laboratory launch/patient');
    const res = await client.get('/Observation');
    expect(idsOf(res.body)).toEqual([lab.id]);
    expect((await client.get(`/Observation/${mine.id}`)).status).toBe(404);
  });

  it('narrow a search that asks for more, and writes', async () => {
    const { admin, patient, lab } = await labAndVitals();
    const { client } = await scopedMember(api, admin, 'user/Observation.cruds?category=laboratory');
    expect(idsOf((await client.get(`/Observation?subject=Patient/${patient.id}`)).body)).toEqual([lab.id]);
    expect((await client.post('/Observation', observationOf(patient.id, 'laboratory'))).status).toBe(201);
    expect((await client.post('/Observation', observationOf(patient.id, 'survey'))).status).toBe(403);
  });
});

describe('SMART scopes and AccessPolicy', () => {
  it('scopes never widen the AccessPolicy: both narrow', async () => {
    const admin = api.newProject();
    const mine = (await admin.post('/Organization', { resourceType: 'Organization', name: 'Mine' })).body;
    const inside = (await admin.post('/Patient', patientBody({ managingOrganization: { reference: `Organization/${mine.id}` } }))).body;
    const outside = (await admin.post('/Patient', patientBody())).body;
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'mine, read-only',
      resource: [{ resourceType: 'Patient', criteria: `Patient?organization=Organization/${mine.id}`, readonly: true }],
    });
    const { client } = await scopedMember(api, admin, 'user/*.cruds', `AccessPolicy/${policy.body.id}`);
    expect(idsOf((await client.get('/Patient')).body)).toEqual([inside.id]);
    expect((await client.get(`/Patient/${outside.id}`)).status).toBe(404);
    expect((await client.post('/Patient', patientBody())).status).toBe(403);
    expect((await client.get('/Observation')).status).toBe(403);
  });
});
