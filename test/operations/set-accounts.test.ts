import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { create, found, sorted } from '../search-api/helpers.js';

/** `$set-accounts` (Medplum's operation): meta.accounts of a resource and, with propagate, of its Patient compartment. */

const api = await useTestServer();

const ref = (reference: string) => ({ reference });
const observation = (patient: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { text: 'x' },
  subject: ref(`Patient/${patient}`),
  ...extra,
});

function setAccounts(client: ProjectClient, target: string, accounts: string[], propagate?: boolean) {
  return client.post(`/${target}/$set-accounts`, {
    resourceType: 'Parameters',
    parameter: [
      ...accounts.map((account) => ({ name: 'accounts', valueReference: ref(account) })),
      ...(propagate === undefined ? [] : [{ name: 'propagate', valueBoolean: propagate }]),
    ],
  });
}

function updatedCount(body: { parameter?: { name: string; valueInteger?: number }[] }): number | undefined {
  return body.parameter?.find((p) => p.name === 'resourcesUpdated')?.valueInteger;
}

/** A project with an Organization (the account), a patient with two Observations and a Condition, and another patient's Observation. */
async function patientWithRecords(p: ProjectClient) {
  const org = `Organization/${await create(p, { resourceType: 'Organization', name: 'Clinic' })}`;
  const patient = await create(p, { resourceType: 'Patient' });
  const records = [
    `Observation/${await create(p, observation(patient))}`,
    `Observation/${await create(p, observation(patient))}`,
    `Condition/${await create(p, { resourceType: 'Condition', subject: ref(`Patient/${patient}`) })}`,
  ];
  const other = await create(p, { resourceType: 'Patient' });
  const unrelated = `Observation/${await create(p, observation(other))}`;
  return { org, patient, records, unrelated };
}

describe('$set-accounts', () => {
  it('sets meta.accounts of the target and answers resourcesUpdated', async () => {
    const p = api.newProject();
    const { org, patient } = await patientWithRecords(p);
    const res = await setAccounts(p, `Patient/${patient}`, [org]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.resourceType).toBe('Parameters');
    expect(updatedCount(res.body)).toBe(1);
    const read = await p.get(`/Patient/${patient}`);
    expect(read.body.meta.accounts).toEqual([ref(org)]);
    expect(read.body.meta.account).toEqual(ref(org));
  });

  it('gives the target a new version in its history', async () => {
    const p = api.newProject();
    const { org, patient } = await patientWithRecords(p);
    await setAccounts(p, `Patient/${patient}`, [org]);
    const history = await p.get(`/Patient/${patient}/_history`);
    expect(history.body.entry).toHaveLength(2);
    expect(history.body.entry[0].resource.meta.accounts).toEqual([ref(org)]);
    expect(history.body.entry[1].resource.meta.accounts).toBeUndefined();
  });

  it('without propagate leaves the compartment alone', async () => {
    const p = api.newProject();
    const { org, patient } = await patientWithRecords(p);
    await setAccounts(p, `Patient/${patient}`, [org], false);
    expect(await found(p, `/Observation?_compartment=${org}`)).toEqual([]);
  });

  it('with propagate sets the accounts of every resource in the patient compartment, and only those', async () => {
    const p = api.newProject();
    const { org, patient, records, unrelated } = await patientWithRecords(p);
    const res = await setAccounts(p, `Patient/${patient}`, [org], true);
    expect(res.status, res.text).toBe(200);
    expect(updatedCount(res.body)).toBe(4);
    const search = await p.get(`?_type=Patient,Observation,Condition&_compartment=${org}`);
    const refs = search.body.entry.map((e: { resource: { resourceType: string; id: string } }) => `${e.resource.resourceType}/${e.resource.id}`);
    expect(refs.sort()).toEqual([`Patient/${patient}`, ...records].sort());
    expect((await p.get(`/${unrelated}`)).body.meta.accounts).toBeUndefined();
    for (const record of records) expect((await p.get(`/${record}/_history`)).body.entry).toHaveLength(2);
  });

  it('propagates additions and removals, keeping accounts of the compartment resources own', async () => {
    const p = api.newProject();
    const { org, patient, records } = await patientWithRecords(p);
    const own = `Organization/${await create(p, { resourceType: 'Organization', name: 'Lab' })}`;
    const later = `Organization/${await create(p, { resourceType: 'Organization', name: 'Later' })}`;
    await setAccounts(p, `Patient/${patient}`, [org], true);
    await setAccounts(p, records[0], [org, own]);
    const res = await setAccounts(p, `Patient/${patient}`, [later], true);
    expect(res.status, res.text).toBe(200);
    expect((await p.get(`/${records[0]}`)).body.meta.accounts).toEqual([ref(own), ref(later)]);
    expect((await p.get(`/${records[1]}`)).body.meta.accounts).toEqual([ref(later)]);
    expect(await found(p, `/Observation?_compartment=${org}`)).toEqual([]);
  });

  it('clears the accounts when none are given', async () => {
    const p = api.newProject();
    const { org, patient } = await patientWithRecords(p);
    await setAccounts(p, `Patient/${patient}`, [org]);
    const res = await setAccounts(p, `Patient/${patient}`, [], false);
    expect(res.status, res.text).toBe(200);
    const read = await p.get(`/Patient/${patient}`);
    expect(read.body.meta.accounts).toBeUndefined();
    expect(read.body.meta.account).toBeUndefined();
    expect(await found(p, `/Patient?_compartment=${org}`)).toEqual([]);
  });

  it('works on a resource of any type', async () => {
    const p = api.newProject();
    const org = `Organization/${await create(p, { resourceType: 'Organization', name: 'Clinic' })}`;
    const practitioner = await create(p, { resourceType: 'Practitioner' });
    expect((await setAccounts(p, `Practitioner/${practitioner}`, [org], true)).status).toBe(200);
    expect(await found(p, `/Practitioner?_compartment=${org}`)).toEqual([practitioner]);
  });

  it('refuses a member who is not a project admin (403) and changes nothing', async () => {
    const admin = api.newProject();
    const { org, patient } = await patientWithRecords(admin);
    const member = await addMemberClient(api, admin);
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    const res = await setAccounts(client, `Patient/${patient}`, [org], true);
    expect(res.status).toBe(403);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect((await admin.get(`/Patient/${patient}`)).body.meta.accounts).toBeUndefined();
  });

  it('answers 404 for a resource that does not exist or is in another project', async () => {
    const p = api.newProject();
    const other = api.newProject();
    const theirs = await create(other, { resourceType: 'Patient' });
    expect((await setAccounts(p, 'Patient/does-not-exist', ['Organization/x'])).status).toBe(404);
    expect((await setAccounts(p, `Patient/${theirs}`, ['Organization/x'])).status).toBe(404);
    expect((await other.get(`/Patient/${theirs}`)).body.meta.accounts).toBeUndefined();
  });

  it('refuses an account without a reference (400)', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    const res = await p.post(`/Patient/${patient}/$set-accounts`, {
      resourceType: 'Parameters',
      parameter: [{ name: 'accounts', valueReference: { display: 'no reference' } }],
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].code).toBe('invalid');
  });

  it('is rolled back with the transaction Bundle it is an entry of', async () => {
    const p = api.newProject();
    const { org, patient, records } = await patientWithRecords(p);
    const res = await p.post('', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        {
          request: { method: 'POST', url: `Patient/${patient}/$set-accounts` },
          resource: { resourceType: 'Parameters', parameter: [{ name: 'accounts', valueReference: ref(org) }, { name: 'propagate', valueBoolean: true }] },
        },
        { request: { method: 'PUT', url: 'Observation/bad' }, resource: { resourceType: 'Observation', id: 'bad' } },
      ],
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect((await p.get(`/Patient/${patient}`)).body.meta.accounts).toBeUndefined();
    expect((await p.get(`/${records[0]}`)).body.meta.accounts).toBeUndefined();
  });
});

describe('$set-accounts size limit', async () => {
  const small = await useTestServer({ SET_ACCOUNTS_MAX_RESOURCES: '3' });

  it('refuses (400 too-costly) a propagation beyond SET_ACCOUNTS_MAX_RESOURCES and changes nothing', async () => {
    const p = small.newProject();
    const { org, patient, records } = await patientWithRecords(p);
    const res = await setAccounts(p, `Patient/${patient}`, [org], true);
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].code).toBe('too-costly');
    expect(res.body.issue[0].diagnostics ?? res.body.issue[0].details?.text).toContain('SET_ACCOUNTS_MAX_RESOURCES');
    expect((await p.get(`/Patient/${patient}`)).body.meta.accounts).toBeUndefined();
    expect((await p.get(`/${records[0]}`)).body.meta.accounts).toBeUndefined();
  });

  it('allows a propagation within the limit', async () => {
    const p = small.newProject();
    const org = `Organization/${await create(p, { resourceType: 'Organization', name: 'Clinic' })}`;
    const patient = await create(p, { resourceType: 'Patient' });
    const obs = [await create(p, observation(patient)), await create(p, observation(patient))];
    const res = await setAccounts(p, `Patient/${patient}`, [org], true);
    expect(res.status, res.text).toBe(200);
    expect(updatedCount(res.body)).toBe(3);
    expect(await found(p, `/Observation?_compartment=${org}`)).toEqual(sorted(...obs));
  });
});
