import { describe, expect, it } from 'vitest';
import { patientBody, projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from './helpers.js';

const api = await useTestServer();

/**
 * A project with two organizations and a patient in each, and a member whose AccessPolicy
 * narrows Patient to `organization=Organization/<mine>` and allows Observation freely.
 */
async function restrictedMember() {
  const admin = api.newProject();
  const mine = await admin.post('/Organization', { resourceType: 'Organization', name: 'Mine' });
  const theirs = await admin.post('/Organization', { resourceType: 'Organization', name: 'Theirs' });
  const inside = await admin.post('/Patient', patientBody({ managingOrganization: { reference: `Organization/${mine.body.id}` } }));
  const outside = await admin.post('/Patient', patientBody({ managingOrganization: { reference: `Organization/${theirs.body.id}` } }));
  const policy = await admin.post('/AccessPolicy', {
    resourceType: 'AccessPolicy',
    name: 'my organization only',
    resource: [
      { resourceType: 'Patient', criteria: `Patient?organization=Organization/${mine.body.id}` },
      { resourceType: 'Observation' },
    ],
  });
  const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  const client: ProjectClient = projectClient(api.fhir, admin.projectId, async () => member.token);
  return { admin, client, inside: inside.body, outside: outside.body };
}

describe('AccessPolicy criteria', () => {
  it('narrow searches of the type to matching resources', async () => {
    const { client, inside } = await restrictedMember();
    const res = await client.get('/Patient');
    expect(res.status).toBe(200);
    expect(res.body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([inside.id]);
  });

  it('narrow a search by a key and another filter as well', async () => {
    const { admin, client, outside } = await restrictedMember();
    const query = `/Patient?organization=${outside.managingOrganization.reference}&gender=male`;
    expect((await admin.get(query)).body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([outside.id]);
    const res = await client.get(query);
    expect(res.status).toBe(200);
    expect(res.body.entry ?? []).toEqual([]);
  });

  it('hide a resource outside the criteria from read (404)', async () => {
    const { client, inside, outside } = await restrictedMember();
    expect((await client.get(`/Patient/${inside.id}`)).status).toBe(200);
    expect((await client.get(`/Patient/${outside.id}`)).status).toBe(404);
  });

  it('keep included resources outside the criteria out of the Bundle', async () => {
    const { admin, client, inside, outside } = await restrictedMember();
    for (const patient of [inside, outside]) {
      await admin.post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${patient.id}` } });
    }
    const res = await client.get('/Observation?_include=Observation:subject');
    const included = res.body.entry.filter((e: { search: { mode: string } }) => e.search.mode === 'include');
    expect(included.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([inside.id]);
  });

  it('refuse updates and deletes of resources outside the criteria (404) and change nothing', async () => {
    const { admin, client, outside } = await restrictedMember();
    expect((await client.put(`/Patient/${outside.id}`, { ...outside, gender: 'other' })).status).toBe(404);
    expect((await client.delete(`/Patient/${outside.id}`)).status).toBe(404);
    expect((await admin.get(`/Patient/${outside.id}`)).body.gender).toBe('male');
  });

  it('refuse a create whose content is outside the criteria (403) and store nothing', async () => {
    const { admin, client, outside } = await restrictedMember();
    const organization = (outside.managingOrganization as { reference: string }).reference;
    const res = await client.post('/Patient', patientBody({ managingOrganization: { reference: organization } }));
    expect(res.status).toBe(403);
    const all = await admin.get('/Patient?_count=100');
    expect(all.body.entry).toHaveLength(2);
  });

  it('refuse an update that moves a resource outside the criteria (403) and keep it unchanged', async () => {
    const { client, inside, outside } = await restrictedMember();
    const res = await client.put(`/Patient/${inside.id}`, { ...inside, managingOrganization: outside.managingOrganization });
    expect(res.status).toBe(403);
    expect((await client.get(`/Patient/${inside.id}`)).body.managingOrganization).toEqual(inside.managingOrganization);
  });

  it('allow a create whose content meets the criteria', async () => {
    const { client, inside } = await restrictedMember();
    const res = await client.post('/Patient', patientBody({ managingOrganization: inside.managingOrganization }));
    expect(res.status).toBe(201);
  });

  it('refuse the type-level history of a narrowed type (403)', async () => {
    const { client } = await restrictedMember();
    expect((await client.get('/Patient/_history')).status).toBe(403);
  });
});

/** A member narrowed to final Observations, and an Observation that was preliminary before it became final. */
async function finalOnlyMember(criteria = 'Observation?status=final') {
  const admin = api.newProject();
  const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'final only', resource: [{ resourceType: 'Observation', criteria }] });
  const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  const client = projectClient(api.fhir, admin.projectId, async () => member.token);
  const body = { resourceType: 'Observation', status: 'preliminary', code: { text: 'heart rate' } };
  const v1 = (await admin.post('/Observation', body)).body;
  const v2 = (await admin.put(`/Observation/${v1.id}`, { ...v1, status: 'final' })).body;
  expect(v2.meta.versionId).not.toBe(v1.meta.versionId);
  return { admin, client, id: v1.id as string, v1: v1.meta.versionId as string, v2: v2.meta.versionId as string };
}

const versionsOf = (bundle: { entry?: { resource: { meta: { versionId: string } } }[] }) => (bundle.entry ?? []).map((e) => e.resource.meta.versionId);

describe('AccessPolicy criteria on past versions', () => {
  it('hide a version that did not meet them from vread (404), while the current one is read', async () => {
    const { client, id, v1, v2 } = await finalOnlyMember();
    expect((await client.get(`/Observation/${id}`)).status).toBe(200);
    expect((await client.get(`/Observation/${id}/_history/${v2}`)).status).toBe(200);
    const old = await client.get(`/Observation/${id}/_history/${v1}`);
    expect(old.status).toBe(404);
    expect(old.body.resourceType).toBe('OperationOutcome');
    expect(old.text).not.toContain('preliminary');
  });

  it('leave such versions out of the instance history', async () => {
    const { admin, client, id, v1, v2 } = await finalOnlyMember();
    expect(versionsOf((await admin.get(`/Observation/${id}/_history`)).body)).toEqual([v2, v1]);
    const history = await client.get(`/Observation/${id}/_history`);
    expect(history.status, history.text).toBe(200);
    expect(versionsOf(history.body)).toEqual([v2]);
    expect(history.text).not.toContain('preliminary');
  });

  it('criteria that cannot be tested on a version in memory judge past versions as the current one', async () => {
    const { client, id, v1, v2 } = await finalOnlyMember('Observation?status:not=cancelled');
    expect((await client.get(`/Observation/${id}/_history/${v1}`)).status).toBe(200);
    expect(versionsOf((await client.get(`/Observation/${id}/_history`)).body)).toEqual([v2, v1]);
  });
});
