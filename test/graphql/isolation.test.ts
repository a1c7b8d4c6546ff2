import { describe, expect, it } from 'vitest';
import { patientBody, projectClient, useTestServer } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { create, data, graphql, observation, onlyError } from './resource-helpers.js';

const api = await useTestServer();

/** Project A with a patient; project B, a stranger to it. */
async function twoProjects() {
  const a = api.newProject();
  const b = api.newProject();
  const patient = await create(a, patientBody({ name: [{ family: 'Private' }] }));
  return { a, b, patient };
}

describe('project isolation through GraphQL', () => {
  it('B cannot read A’s resource: not found, as over REST', async () => {
    const { b, patient } = await twoProjects();
    expect((await b.get(`/Patient/${patient.id}`)).status).toBe(404);
    const res = await graphql(api, b, `query ($id: ID!) { Patient(id: $id) { id name { family } } }`, { id: patient.id });
    expect(res.body.data).toEqual({ Patient: null });
    expect(onlyError(res).code).toBe('not-found');
  });

  it('B’s searches and connections do not see A’s resources, not even in the count', async () => {
    const { b, patient } = await twoProjects();
    const body = await data(
      api,
      b,
      `query ($id: String!) {
        byId: PatientList(_id: [$id]) { id }
        all: PatientList { id }
        connection: PatientConnection(family: "Private") { count edges { resource { id } } }
      }`,
      { id: patient.id },
    );
    expect(body).toEqual({ byId: [], all: [], connection: { count: 0, edges: [] } });
  });

  it('B cannot update A’s resource (its id is in use server-wide) and A’s resource is unchanged', async () => {
    const { a, b, patient } = await twoProjects();
    const res = await graphql(api, b, `mutation ($id: ID!) { PatientUpdate(id: $id, res: { name: [{ family: "Stolen" }] }) { id } }`, {
      id: patient.id,
    });
    expect(res.body.data).toEqual({ PatientUpdate: null });
    expect(onlyError(res).code).toBe('conflict');
    expect((await a.get(`/Patient/${patient.id}`)).body.name).toEqual([{ family: 'Private' }]);
  });

  it('B cannot delete A’s resource (not found) and it stays readable by A', async () => {
    const { a, b, patient } = await twoProjects();
    const error = onlyError(await graphql(api, b, `mutation ($id: ID!) { PatientDelete(id: $id) { id } }`, { id: patient.id }));
    expect(error.code).toBe('not-found');
    expect((await a.get(`/Patient/${patient.id}`)).status).toBe(200);
  });

  it('a reference from B to A’s resource does not resolve, exactly as a missing target', async () => {
    const { b, patient } = await twoProjects();
    const toA = await create(b, observation(`Patient/${patient.id}`));
    const toNothing = await create(b, observation('Patient/does-not-exist'));
    const query = `query ($id: ID!) { Observation(id: $id) { subject { reference resource { resourceType } } } }`;
    const hidden = await graphql(api, b, query, { id: toA.id });
    const missing = await graphql(api, b, query, { id: toNothing.id });
    expect(hidden.body.data.Observation.subject).toEqual({ reference: `Patient/${patient.id}`, resource: null });
    expect(onlyError(hidden).code).toBe(onlyError(missing).code);
    expect(onlyError(hidden).text.replace(patient.id, 'X')).toBe(onlyError(missing).text.replace('does-not-exist', 'X'));
  });

  it('B’s search by a reference to A’s resource does not find A’s resources', async () => {
    const { a, b, patient } = await twoProjects();
    await create(a, observation(`Patient/${patient.id}`));
    const mine = await create(b, observation(`Patient/${patient.id}`));
    const body = await data(api, b, `query ($ref: String!) { ObservationList(subject: [$ref]) { id } }`, { ref: `Patient/${patient.id}` });
    expect(body.ObservationList).toEqual([{ id: mine.id }]);
  });

  it('the same holds at /graphql', async () => {
    const { b, patient } = await twoProjects();
    const res = await graphql(api, b, `query ($id: ID!) { Patient(id: $id) { id } }`, { id: patient.id }, '/graphql');
    expect(onlyError(res).code).toBe('not-found');
  });
});

describe('access rules on mutations', () => {
  it('a read-only AccessPolicy refuses creates with forbidden, as REST does', async () => {
    const admin = api.newProject();
    const policy = await create(admin, { resourceType: 'AccessPolicy', name: 'read only', resource: [{ resourceType: 'Patient', readonly: true }] });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.id}` });
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    expect((await client.post('/Patient', patientBody())).status).toBe(403);
    const res = await graphql(api, client, `mutation { PatientCreate(res: { gender: "female" }) { id } }`);
    expect(onlyError(res).code).toBe('forbidden');
  });

  it('only project admins may create admin types such as AccessPolicy', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    const res = await graphql(api, client, `mutation { AccessPolicyCreate(res: { name: "mine" }) { id } }`);
    expect(onlyError(res).code).toBe('forbidden');
  });
});
