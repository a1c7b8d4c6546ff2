import { describe, expect, it } from 'vitest';
import { patientBody, projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, clientToken } from '../auth/helpers.js';

/**
 * Project/$clone and what decides who reads the copies: an AccessPolicy's criteria and the
 * resources' `meta.accounts` name resources by id, and in the clone those are the copies' ids.
 * Checked as a member of the clone with the cloned policy sees it.
 */

const api = await useTestServer();

type Json = Record<string, any>;

async function create(client: ProjectClient, resource: Json): Promise<Json> {
  const res = await client.post(`/${resource.resourceType}`, resource);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A source project with a member app under an AccessPolicy of `rules`; its admin. */
async function projectWithPolicy(rules: (admin: ProjectClient) => Promise<Json[]>): Promise<ProjectClient> {
  const admin = api.newProject();
  const policy = await create(admin, { resourceType: 'AccessPolicy', name: 'narrowed', resource: await rules(admin) });
  await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.id}` });
  return admin;
}

/** A client acting as the clone's copy of the ClientApplication whose name `named` accepts. */
async function cloneClient(cloneId: string, named: (name: string) => boolean): Promise<ProjectClient> {
  const clients = await api.superAdmin.get(`/ClientApplication?_project=${cloneId}`);
  const app = clients.body.entry.map((entry: Json) => entry.resource).find((client: Json) => named(client.name));
  const token = await clientToken(api, app.id, app.secret);
  expect(token.status, JSON.stringify(token.body)).toBe(200);
  return projectClient(api.fhir, cloneId, async () => token.body.access_token);
}

/** Clones the admin's project: the clone's id, its copy of the member app and of the admin's own client. */
async function cloneOf(admin: ProjectClient): Promise<{ cloneId: string; member: ProjectClient; cloneAdmin: ProjectClient }> {
  const cloned = await api.superAdmin.post(`/Project/${admin.projectId}/$clone`, { name: 'copy' }, { 'Content-Type': 'application/json' });
  expect(cloned.status, cloned.text).toBe(201);
  const cloneId = cloned.body.id as string;
  return {
    cloneId,
    member: await cloneClient(cloneId, (name) => name === 'member app'),
    cloneAdmin: await cloneClient(cloneId, (name) => name === 'copy Default Client'),
  };
}

describe('Project/$clone and access', () => {
  it("gives a member of the clone whose policy's criteria name a patient the Observations of that patient's copy", async () => {
    let patientId = '';
    const admin = await projectWithPolicy(async (owner) => {
      patientId = (await create(owner, patientBody())).id;
      await create(owner, { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patientId}` } });
      return [{ resourceType: 'Observation', criteria: `Observation?subject=Patient/${patientId}` }];
    });
    const { member } = await cloneOf(admin);
    const found = await member.get('/Observation');
    expect(found.status, found.text).toBe(200);
    expect(found.body.entry).toHaveLength(1);
    expect(found.body.entry[0].resource.subject.reference).not.toBe(`Patient/${patientId}`);
  });

  it("gives a member of the clone whose policy's criteria name a patient URL-encoded (Patient%2F<id>) the Observations of that patient's copy", async () => {
    let patientId = '';
    const admin = await projectWithPolicy(async (owner) => {
      patientId = (await create(owner, patientBody())).id;
      await create(owner, { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patientId}` } });
      return [{ resourceType: 'Observation', criteria: `Observation?subject=Patient%2F${patientId}&status=final` }];
    });
    const { member, cloneAdmin } = await cloneOf(admin);
    const copy = (await cloneAdmin.get('/Patient')).body.entry[0].resource;
    const found = await member.get('/Observation');
    expect(found.status, found.text).toBe(200);
    expect(found.body.entry.map((entry: Json) => entry.resource.subject.reference)).toEqual([`Patient/${copy.id}`]);
  });

  it('renames a URL-encoded criteria value to its copy, still URL-encoded', async () => {
    let patientId = '';
    const admin = await projectWithPolicy(async (owner) => {
      patientId = (await create(owner, patientBody())).id;
      return [{ resourceType: 'Observation', criteria: `Observation?subject=Patient%2F${patientId}%2CPatient%2Fnot-in-the-source&code=8867-4` }];
    });
    const { cloneId, cloneAdmin } = await cloneOf(admin);
    const copy = (await cloneAdmin.get('/Patient')).body.entry[0].resource;
    const policies = await api.superAdmin.get(`/AccessPolicy?_project=${cloneId}`);
    expect(policies.body.entry[0].resource.resource[0].criteria).toBe(`Observation?subject=Patient%2F${copy.id},Patient%2Fnot-in-the-source&code=8867-4`);
  });

  it("gives a member of the clone whose policy narrows Patients to an account the patients of the account's copy", async () => {
    const admin = await projectWithPolicy(async (owner) => {
      const clinic = await create(owner, { resourceType: 'Organization', name: 'clinic' });
      await create(owner, { ...patientBody(), meta: { accounts: [{ reference: `Organization/${clinic.id}` }] } });
      await create(owner, patientBody());
      return [{ resourceType: 'Patient', criteria: `Patient?_compartment=Organization/${clinic.id}` }];
    });
    const { member, cloneAdmin } = await cloneOf(admin);
    const clinic = (await cloneAdmin.get('/Organization')).body.entry[0].resource;
    // A patient the clone's admin assigns to the clone's clinic, beside the copy of the source's.
    await create(cloneAdmin, { ...patientBody(), meta: { accounts: [{ reference: `Organization/${clinic.id}` }] } });
    const found = await member.get('/Patient');
    expect(found.status, found.text).toBe(200);
    expect(found.body.entry).toHaveLength(2);
  });

  it('keeps criteria values that name no cloned resource as they are', async () => {
    const criteria = ['Observation?subject=%patient&code=8867-4', 'Observation?subject=Patient/not-in-the-source', 'Patient?_id=elsewhere'];
    const admin = await projectWithPolicy(async () => criteria.map((c) => ({ resourceType: c.split('?')[0], criteria: c })));
    const { cloneId } = await cloneOf(admin);
    const policies = await api.superAdmin.get(`/AccessPolicy?_project=${cloneId}`);
    expect(policies.body.entry[0].resource.resource.map((rule: Json) => rule.criteria)).toEqual(criteria);
  });
});
