import { describe, expect, it } from 'vitest';
import { patientBody, projectClient, useTestServer } from '../helpers/server.js';
import { addMemberClient } from './helpers.js';

const api = await useTestServer();

/** A ProjectClient acting with a given token in a project. */
const as = (projectId: string, token: string) => projectClient(api.fhir, projectId, async () => token);

describe('project admins and members', () => {
  it('lets only project admins create or change memberships, client applications and access policies', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const client = as(admin.projectId, member.token);
    // Members work with clinical data as usual.
    expect((await client.post('/Patient', patientBody())).status).toBe(201);
    const attempts = [
      await client.post('/ClientApplication', { resourceType: 'ClientApplication', name: 'x' }),
      await client.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'x' }),
      await client.post('/ProjectMembership', {
        resourceType: 'ProjectMembership',
        project: { reference: `Project/${admin.projectId}` },
        user: { reference: `ClientApplication/${member.clientId}` },
        profile: { reference: `ClientApplication/${member.clientId}` },
        admin: true,
      }),
      await client.put(`/ClientApplication/${member.clientId}`, { resourceType: 'ClientApplication', id: member.clientId, name: 'renamed' }),
      await client.delete(`/ClientApplication/${member.clientId}`),
      await client.post('/Project', { resourceType: 'Project', name: 'mine' }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(403);
      expect(res.body.issue[0].code).toBe('forbidden');
    }
    // The admin can.
    expect((await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'ok' })).status).toBe(201);
  });

  it('shows a ClientApplication secret to project admins only, and never stores it in the resource', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const asAdmin = await admin.get(`/ClientApplication/${member.clientId}`);
    expect(asAdmin.body.secret).toBe(member.secret);
    const asMember = await as(admin.projectId, member.token).get(`/ClientApplication/${member.clientId}`);
    expect(asMember.status).toBe(200);
    expect(asMember.body.secret).toBeUndefined();
    const history = await admin.get(`/ClientApplication/${member.clientId}/_history`);
    expect(JSON.stringify(history.body)).not.toContain(member.secret);
    const stored = await api.server.services.db.query<{ content: string }>(
      `SELECT content::text AS content FROM resource_history WHERE "resourceType" = 'ClientApplication' AND id = $1`,
      [member.clientId],
    );
    expect(stored.map((row) => row.content).join()).not.toContain(member.secret);
    // A new secret by PUT replaces the old one.
    const rotated = await admin.put(`/ClientApplication/${member.clientId}`, {
      resourceType: 'ClientApplication',
      id: member.clientId,
      name: 'member app',
      secret: 'a-new-secret-of-the-admins-choosing',
    });
    expect(rotated.body.secret).toBe('a-new-secret-of-the-admins-choosing');
    const patch = await admin.patch(`/ClientApplication/${member.clientId}`, [{ op: 'add', path: '/secret', value: 'x' }]);
    expect(patch.status).toBe(400);
  });

  it('refuses a membership that names another project', async () => {
    const admin = api.newProject();
    const other = api.newProject();
    const res = await admin.post('/ProjectMembership', {
      resourceType: 'ProjectMembership',
      project: { reference: `Project/${other.projectId}` },
      user: { reference: 'User/x' },
      profile: { reference: 'Practitioner/x' },
      admin: true,
    });
    expect(res.status).toBe(403);
  });
});

describe('AccessPolicy', () => {
  it('limits a membership to allowed types, read-only where marked', async () => {
    const admin = api.newProject();
    const observation = await admin.post('/Observation', {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'weight' },
    });
    const practitioner = await admin.post('/Practitioner', { resourceType: 'Practitioner' });
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'patients, observations read-only',
      resource: [{ resourceType: 'Patient' }, { resourceType: 'Observation', readonly: true }],
    });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const client = as(admin.projectId, member.token);
    const patient = await client.post('/Patient', patientBody());
    expect(patient.status).toBe(201);
    expect((await client.get(`/Patient/${patient.body.id}`)).status).toBe(200);
    expect((await client.get(`/Observation/${observation.body.id}`)).status).toBe(200);
    const write = await client.put(`/Observation/${observation.body.id}`, { ...observation.body, status: 'amended' });
    expect(write.status).toBe(403);
    expect(write.body.issue[0].code).toBe('forbidden');
    expect((await client.post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' } })).status).toBe(403);
    expect((await client.get(`/Practitioner/${practitioner.body.id}`)).status).toBe(403);
    expect((await client.get('/Practitioner/_history')).status).toBe(403);
    // Search of a type the policy does not allow, and a system search that does not name its types.
    expect((await client.get('/Practitioner')).status).toBe(403);
    expect((await client.get('?_type=Practitioner')).status).toBe(403);
    expect((await client.get('')).status).toBe(403);
    expect((await client.get('/Patient')).status).not.toBe(403);
    // GraphQL applies the same policy.
    const gql = await api.raw('/graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${member.token}` },
      body: JSON.stringify({ query: `{ resource(resourceType: "Practitioner", id: "${practitioner.body.id}") }` }),
    });
    expect((await gql.json()).errors[0].extensions.resource.issue[0].code).toBe('forbidden');
  });

  it('lets a member post batch and transaction Bundles, checking each entry against the policy', async () => {
    const admin = api.newProject();
    const practitioner = await admin.post('/Practitioner', { resourceType: 'Practitioner' });
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'patients', resource: [{ resourceType: 'Patient' }] });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const client = as(admin.projectId, member.token);
    const batch = await client.post('', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [{ resource: patientBody(), request: { method: 'POST', url: 'Patient' } }, { request: { method: 'GET', url: `Practitioner/${practitioner.body.id}` } }],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.entry.map((e: { response: { status: string } }) => e.response.status.slice(0, 3))).toEqual(['201', '403']);
    const transaction = await client.post('', { resourceType: 'Bundle', type: 'transaction', entry: [{ resource: patientBody(), request: { method: 'POST', url: 'Patient' } }] });
    expect(transaction.status).toBe(200);
    expect(transaction.body.entry[0].response.status).toMatch(/^201/);
  });
});
