import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { create, found, sorted } from './helpers.js';

/**
 * `_compartment` on every type: the patients whose compartment a resource is in (by the R4 Patient
 * CompartmentDefinition's parameters) and the references of its `meta.accounts`, computed when
 * the resource is written.
 */

const api = await useTestServer();

const observation = (extra: Record<string, unknown>) => ({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, ...extra });

describe('_compartment', () => {
  it('finds the resources in a patient compartment, by subject or performer', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    const other = await create(p, { resourceType: 'Patient' });
    const bySubject = await create(p, observation({ subject: { reference: `Patient/${patient}` } }));
    const byPerformer = await create(p, observation({ performer: [{ reference: `Patient/${patient}` }] }));
    await create(p, observation({ subject: { reference: `Patient/${other}` } }));
    expect(await found(p, `/Observation?_compartment=Patient/${patient}`)).toEqual(sorted(bySubject, byPerformer));
  });

  it('puts a Patient in its own compartment', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    await create(p, { resourceType: 'Patient' });
    expect(await found(p, `/Patient?_compartment=Patient/${patient}`)).toEqual([patient]);
  });

  it('does not count a reference to a non-Patient through a compartment parameter', async () => {
    const p = api.newProject();
    const group = await create(p, { resourceType: 'Group', type: 'person', actual: true });
    await create(p, observation({ subject: { reference: `Group/${group}` } }));
    expect(await found(p, `/Observation?_compartment=Group/${group}`)).toEqual([]);
  });

  it('does not count a patient referenced by a parameter outside the compartment definition', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    // Observation.focus is not one of Observation's Patient-compartment parameters.
    await create(p, observation({ focus: [{ reference: `Patient/${patient}` }] }));
    expect(await found(p, `/Observation?_compartment=Patient/${patient}`)).toEqual([]);
  });

  it('finds the resources assigned to an account by meta.accounts, of any type', async () => {
    const p = api.newProject();
    const org = await create(p, { resourceType: 'Organization', name: 'Clinic' });
    const assigned = await create(p, observation({ meta: { accounts: [{ reference: `Organization/${org}` }] } }));
    const practitioner = await create(p, { resourceType: 'Practitioner', meta: { accounts: [{ reference: `Organization/${org}` }] } });
    await create(p, observation({}));
    expect(await found(p, `/Observation?_compartment=Organization/${org}`)).toEqual([assigned]);
    expect(await found(p, `/Practitioner?_compartment=Organization/${org}`)).toEqual([practitioner]);
  });

  it('counts the older single meta.account too', async () => {
    const p = api.newProject();
    const org = await create(p, { resourceType: 'Organization', name: 'Clinic' });
    const assigned = await create(p, observation({ meta: { account: { reference: `Organization/${org}` } } }));
    expect(await found(p, `/Observation?_compartment=Organization/${org}`)).toEqual([assigned]);
  });

  it('follows an update: a resource moved to another account or patient leaves the old one', async () => {
    const p = api.newProject();
    const [a, b] = [await create(p, { resourceType: 'Organization', name: 'A' }), await create(p, { resourceType: 'Organization', name: 'B' })];
    const id = await create(p, observation({ meta: { accounts: [{ reference: `Organization/${a}` }] } }));
    const res = await p.put(`/Observation/${id}`, observation({ id, meta: { accounts: [{ reference: `Organization/${b}` }] } }));
    expect(res.status, res.text).toBe(200);
    expect(await found(p, `/Observation?_compartment=Organization/${a}`)).toEqual([]);
    expect(await found(p, `/Observation?_compartment=Organization/${b}`)).toEqual([id]);
  });

  it('takes several values as OR, a bare id, and a :Type modifier', async () => {
    const p = api.newProject();
    const [x, y] = [await create(p, { resourceType: 'Patient' }), await create(p, { resourceType: 'Patient' })];
    const ox = await create(p, observation({ subject: { reference: `Patient/${x}` } }));
    const oy = await create(p, observation({ subject: { reference: `Patient/${y}` } }));
    expect(await found(p, `/Observation?_compartment=Patient/${x},Patient/${y}`)).toEqual(sorted(ox, oy));
    expect(await found(p, `/Observation?_compartment=${x}`)).toEqual([ox]);
    expect(await found(p, `/Observation?_compartment:Patient=${y}`)).toEqual([oy]);
  });

  it('searches across types with _type', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    const obs = await create(p, observation({ subject: { reference: `Patient/${patient}` } }));
    const condition = await create(p, { resourceType: 'Condition', subject: { reference: `Patient/${patient}` } });
    const res = await p.get(`?_type=Observation,Condition,Patient&_compartment=Patient/${patient}`);
    expect(res.status, res.text).toBe(200);
    const refs = res.body.entry.map((e: { resource: { resourceType: string; id: string } }) => `${e.resource.resourceType}/${e.resource.id}`).sort();
    expect(refs).toEqual([`Condition/${condition}`, `Observation/${obs}`, `Patient/${patient}`].sort());
  });

  it('is listed in the CapabilityStatement as a reference parameter', async () => {
    const res = await api.newProject().get('/metadata');
    const observationRest = res.body.rest[0].resource.find((r: { type: string }) => r.type === 'Observation');
    expect(observationRest.searchParam).toContainEqual(expect.objectContaining({ name: '_compartment', type: 'reference' }));
  });

  it('works in AccessPolicy criteria: a member sees only the account\'s resources of the type', async () => {
    const admin = api.newProject();
    const org = await create(admin, { resourceType: 'Organization', name: 'Clinic' });
    const inside = await create(admin, observation({ meta: { accounts: [{ reference: `Organization/${org}` }] } }));
    const outside = await create(admin, observation({}));
    const policy = await create(admin, {
      resourceType: 'AccessPolicy',
      name: 'clinic observations',
      resource: [{ resourceType: 'Observation', criteria: `Observation?_compartment=Organization/${org}` }],
    });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy}` });
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    expect(await found(client, '/Observation')).toEqual([inside]);
    expect((await client.get(`/Observation/${outside}`)).status).toBe(404);
  });
});
