import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, sorted } from '../search-api/helpers.js';
import { addMemberClient } from './helpers.js';

/**
 * meta.accounts in access control: who may set them on ordinary writes (as Medplum decides), how
 * writes keep and inherit them, and AccessPolicy rules narrowing a type to an account.
 */

const api = await useTestServer();

const ref = (reference: string) => ({ reference });
const observation = (extra: Record<string, unknown> = {}) => ({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, ...extra });

async function member(admin: ProjectClient, policy?: Record<string, unknown>): Promise<ProjectClient> {
  const accessPolicy = policy ? `AccessPolicy/${await create(admin, { resourceType: 'AccessPolicy', name: 'test', ...policy })}` : undefined;
  const created = await addMemberClient(api, admin, accessPolicy ? { accessPolicy } : {});
  return projectClient(api.fhir, admin.projectId, async () => created.token);
}

async function account(admin: ProjectClient, name: string): Promise<string> {
  return `Organization/${await create(admin, { resourceType: 'Organization', name })}`;
}

async function setAccounts(admin: ProjectClient, target: string, accounts: string[], propagate = false) {
  const res = await admin.post(`/${target}/$set-accounts`, {
    resourceType: 'Parameters',
    parameter: [...accounts.map((a) => ({ name: 'accounts', valueReference: ref(a) })), { name: 'propagate', valueBoolean: propagate }],
  });
  expect(res.status, res.text).toBe(200);
}

/** Two accounts A and B, and a patient in each (pa in A, pb in B). */
async function twoPatientsInAccounts(admin: ProjectClient) {
  const [a, b] = [await account(admin, 'A'), await account(admin, 'B')];
  const [pa, pb] = [await create(admin, { resourceType: 'Patient' }), await create(admin, { resourceType: 'Patient' })];
  await setAccounts(admin, `Patient/${pa}`, [a]);
  await setAccounts(admin, `Patient/${pb}`, [b]);
  return { a, b, pa, pb };
}

describe('meta.accounts on ordinary writes', () => {
  it('a project admin sets them directly on create', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const res = await admin.post('/Observation', observation({ meta: { accounts: [ref(org)] } }));
    expect(res.status).toBe(201);
    expect(res.body.meta.accounts).toEqual([ref(org)]);
  });

  it('a PUT without meta keeps the accounts', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const id = await create(admin, observation({ meta: { accounts: [ref(org)] } }));
    const res = await admin.put(`/Observation/${id}`, observation({ id, status: 'amended' }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.meta.accounts).toEqual([ref(org)]);
    expect(await found(admin, `/Observation?_compartment=${org}`)).toEqual([id]);
  });

  it('a project admin PUT with a meta that has no accounts clears them (as Medplum)', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const id = await create(admin, observation({ meta: { accounts: [ref(org)] } }));
    const res = await admin.put(`/Observation/${id}`, observation({ id, meta: { tag: [{ code: 't' }] } }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.meta.accounts).toBeUndefined();
  });

  it('a member who is not an admin cannot set them: accounts in the body are ignored', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const client = await member(admin);
    const res = await client.post('/Observation', observation({ meta: { accounts: [ref(org)] } }));
    expect(res.status, res.text).toBe(201);
    expect(res.body.meta.accounts).toBeUndefined();
    expect(await found(admin, `/Observation?_compartment=${org}`)).toEqual([]);
  });

  it('a member update keeps the accounts whatever its body says', async () => {
    const admin = api.newProject();
    const [a, b] = [await account(admin, 'A'), await account(admin, 'B')];
    const id = await create(admin, observation({ meta: { accounts: [ref(a)] } }));
    const client = await member(admin);
    const res = await client.put(`/Observation/${id}`, observation({ id, status: 'amended', meta: { accounts: [ref(b)] } }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.meta.accounts).toEqual([ref(a)]);
    const patched = await client.patch(`/Observation/${id}`, [{ op: 'remove', path: '/meta/accounts' }]);
    expect(patched.status, patched.text).toBe(200);
    expect((await admin.get(`/Observation/${id}`)).body.meta.accounts).toEqual([ref(a)]);
  });

  it('a new resource in a patient compartment inherits the patient accounts', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const patient = await create(admin, { resourceType: 'Patient' });
    await setAccounts(admin, `Patient/${patient}`, [org]);
    const client = await member(admin);
    const res = await client.post('/Observation', observation({ subject: ref(`Patient/${patient}`) }));
    expect(res.status, res.text).toBe(201);
    expect(res.body.meta.accounts).toEqual([ref(org)]);
  });

  it('an update moving a resource to another patient trades the old patient accounts for the new one', async () => {
    const admin = api.newProject();
    const { a, b, pa, pb } = await twoPatientsInAccounts(admin);
    const client = await member(admin);
    const id = (await client.post('/Observation', observation({ subject: ref(`Patient/${pa}`) }))).body.id;
    const res = await client.put(`/Observation/${id}`, observation({ id, subject: ref(`Patient/${pb}`) }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.meta.accounts).toEqual([ref(b)]);
    expect(await found(admin, `/Observation?_compartment=${a}`)).toEqual([]);
    expect(await found(admin, `/Observation?_compartment=${b}`)).toEqual([id]);
  });

  it('an account an admin set stays when the resource moves to another patient', async () => {
    const admin = api.newProject();
    const { a, b, pa, pb } = await twoPatientsInAccounts(admin);
    const own = await account(admin, 'Own');
    const id = await create(admin, observation({ subject: ref(`Patient/${pa}`), meta: { accounts: [ref(own), ref(a)] } }));
    const client = await member(admin);
    const res = await client.patch(`/Observation/${id}`, [{ op: 'replace', path: '/subject/reference', value: `Patient/${pb}` }]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.meta.accounts).toEqual([ref(own), ref(b)]);
  });

  it('a patient given its first account passes it on to the next resource written for it', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const patient = await create(admin, { resourceType: 'Patient' });
    const client = await member(admin);
    const before = await client.post('/Observation', observation({ subject: ref(`Patient/${patient}`) }));
    expect(before.body.meta.accounts).toBeUndefined();
    await setAccounts(admin, `Patient/${patient}`, [org]);
    const after = await client.post('/Observation', observation({ subject: ref(`Patient/${patient}`) }));
    expect(after.status, after.text).toBe(201);
    expect(after.body.meta.accounts).toEqual([ref(org)]);
  });

  it('the resources of a batch inherit the accounts of their patients too', async () => {
    const admin = api.newProject();
    const { a, b, pa, pb } = await twoPatientsInAccounts(admin);
    const client = await member(admin);
    const entry = [pa, pb, pa].map((patient) => ({ request: { method: 'POST', url: 'Observation' }, resource: observation({ subject: ref(`Patient/${patient}`) }) }));
    const res = await client.post('', { resourceType: 'Bundle', type: 'batch', entry });
    expect(res.status, res.text).toBe(200);
    const ids = res.body.entry.map((e: { response: { status: string; location: string } }) => {
      expect(e.response.status).toMatch(/^201/);
      return /Observation\/([^/]+)/.exec(e.response.location)![1];
    });
    expect(await found(admin, `/Observation?_compartment=${a}`)).toEqual(sorted(ids[0], ids[2]));
    expect(await found(admin, `/Observation?_compartment=${b}`)).toEqual([ids[1]]);
  });
});

describe('AccessPolicy narrowing a type to an account', () => {
  it('criteria _compartment: a member sees only the account resources, after a propagation', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const [inside, outside] = [await create(admin, { resourceType: 'Patient' }), await create(admin, { resourceType: 'Patient' })];
    const visible = [await create(admin, observation({ subject: ref(`Patient/${inside}`) })), await create(admin, observation({ subject: ref(`Patient/${inside}`) }))];
    const hidden = await create(admin, observation({ subject: ref(`Patient/${outside}`) }));
    await setAccounts(admin, `Patient/${inside}`, [org], true);
    const client = await member(admin, {
      resource: [
        { resourceType: 'Patient', criteria: `Patient?_compartment=${org}` },
        { resourceType: 'Observation', criteria: `Observation?_compartment=${org}` },
      ],
    });
    expect(await found(client, '/Observation')).toEqual(sorted(...visible));
    expect(await found(client, '/Patient')).toEqual([inside]);
    expect((await client.get(`/Observation/${hidden}`)).status).toBe(404);
  });

  it('a narrowed member may create a resource of a patient in the account (it inherits the account), not of another', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const [inside, outside] = [await create(admin, { resourceType: 'Patient' }), await create(admin, { resourceType: 'Patient' })];
    await setAccounts(admin, `Patient/${inside}`, [org]);
    const client = await member(admin, { resource: [{ resourceType: 'Observation', criteria: `Observation?_compartment=${org}` }] });
    expect((await client.post('/Observation', observation({ subject: ref(`Patient/${inside}`) }))).status).toBe(201);
    const refused = await client.post('/Observation', observation({ subject: ref(`Patient/${outside}`) }));
    expect(refused.status).toBe(403);
    expect(await found(admin, `/Observation?subject=Patient/${outside}`)).toEqual([]);
  });

  it('AccessPolicy.resource.compartment (Medplum, deprecated) narrows like _compartment criteria', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const inside = await create(admin, observation({ meta: { accounts: [ref(org)] } }));
    await create(admin, observation());
    const client = await member(admin, { resource: [{ resourceType: 'Observation', compartment: ref(org) }] });
    expect(await found(client, '/Observation')).toEqual([inside]);
  });

  it('AccessPolicy.resource.compartment on a * rule narrows every type', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const obs = await create(admin, observation({ meta: { accounts: [ref(org)] } }));
    const patient = await create(admin, { resourceType: 'Patient', meta: { accounts: [ref(org)] } });
    await create(admin, observation());
    await create(admin, { resourceType: 'Patient' });
    const client = await member(admin, { resource: [{ resourceType: '*', compartment: ref(org) }] });
    expect(await found(client, '/Observation')).toEqual([obs]);
    expect(await found(client, '/Patient')).toEqual([patient]);
  });

  it('AccessPolicy.compartment (Medplum, deprecated) assigns a member new resources to that account', async () => {
    const admin = api.newProject();
    const org = await account(admin, 'A');
    const client = await member(admin, { compartment: ref(org), resource: [{ resourceType: 'Observation', compartment: ref(org) }] });
    const res = await client.post('/Observation', observation());
    expect(res.status, res.text).toBe(201);
    expect(res.body.meta.accounts).toEqual([ref(org)]);
    expect(await found(client, '/Observation')).toEqual([res.body.id]);
  });
});
