import { randomUUID } from 'node:crypto';
import { MedplumClient } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import { useMedplumSessionStorage } from '../helpers/medplum-session.js';
import { patientBody, projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, sendJson, tokenRequest } from './helpers.js';

/**
 * The everyday flows of a Medplum app, by a project member whose membership has an AccessPolicy:
 * allowed things work, forbidden types are 403 naming the type, resources outside the criteria
 * are hidden (404) and never leak through includes, batches, GraphQL, $everything or history.
 */

const api = await useTestServer();
useMedplumSessionStorage();

type Entry = { resource?: any; response?: { status: string; location?: string; outcome?: any }; search?: { mode: string } };

const ids = (bundle: { entry?: Entry[] }, mode?: string) =>
  (bundle.entry ?? []).filter((e) => !mode || e.search?.mode === mode).map((e) => `${e.resource.resourceType}/${e.resource.id}`);

interface Member {
  admin: ProjectClient;
  client: ProjectClient;
  token: string;
  clientId: string;
  secret: string;
}

/** A member client of a new project whose membership has the AccessPolicy `resource` rules. */
async function memberWith(resource: unknown[], admin = api.newProject()): Promise<Member> {
  const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'member policy', resource });
  expect(policy.status, policy.text).toBe(201);
  const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  return { admin, client: projectClient(api.fhir, admin.projectId, async () => member.token), ...member };
}

const observation = (patientId: string, status = 'final', extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status,
  code: { text: 'heart rate' },
  subject: { reference: `Patient/${patientId}` },
  ...extra,
});

async function created(client: ProjectClient, body: Record<string, unknown>): Promise<any> {
  const res = await client.post(`/${body.resourceType as string}`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

function expectForbidden(res: { status: number; body: any }, type: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('forbidden');
  expect(res.body.issue[0].details.text).toContain(type);
}

/** Create, update, patch and delete of Observations are 403 naming the type. */
async function expectObservationWritesRefused(client: ProjectClient, obs: any): Promise<void> {
  expectForbidden(await client.post('/Observation', { ...obs, id: undefined, meta: undefined }), 'Observation');
  expectForbidden(await client.put(`/Observation/${obs.id}`, { ...obs, status: 'amended' }), 'Observation');
  expectForbidden(await client.patch(`/Observation/${obs.id}`, [{ op: 'replace', path: '/status', value: 'amended' }]), 'Observation');
  expectForbidden(await client.delete(`/Observation/${obs.id}`), 'Observation');
}

/** Patient allowed, Observation read-only, nothing else. */
const TYPE_LIST = [{ resourceType: 'Patient' }, { resourceType: 'Observation', readonly: true }];
/** Patient allowed, Observation narrowed to final ones. */
const CRITERIA = [{ resourceType: 'Patient' }, { resourceType: 'Observation', criteria: 'Observation?status=final' }];

async function criteriaMember() {
  const member = await memberWith(CRITERIA);
  const patient = await created(member.admin, patientBody());
  const final = await created(member.admin, observation(patient.id, 'final'));
  const preliminary = await created(member.admin, observation(patient.id, 'preliminary'));
  return { ...member, patient, final, preliminary };
}

describe('a member with a type list and a read-only type', () => {
  it('reads, searches and vreads the read-only type', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const patient = await created(admin, patientBody());
    const obs = await created(admin, observation(patient.id));
    expect((await client.get(`/Observation/${obs.id}`)).body.id).toBe(obs.id);
    expect((await client.get(`/Observation/${obs.id}/_history/${obs.meta.versionId}`)).status).toBe(200);
    const search = await client.get(`/Observation?subject=Patient/${patient.id}&_total=accurate`);
    expect(search.status).toBe(200);
    expect(search.body.total).toBe(1);
  });

  it('refuses to create, update, patch and delete the read-only type (403 naming it)', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const patient = await created(admin, patientBody());
    const obs = await created(admin, observation(patient.id));
    await expectObservationWritesRefused(client, obs);
    expect((await admin.get(`/Observation/${obs.id}`)).body.meta.versionId).toBe(obs.meta.versionId);
  });

  it('creates, updates, patches, deletes and reads the history of an allowed type', async () => {
    const { client } = await memberWith(TYPE_LIST);
    const patient = await created(client, patientBody());
    const updated = await client.put(`/Patient/${patient.id}`, { ...patient, gender: 'female' });
    expect(updated.status, updated.text).toBe(200);
    const patched = await client.patch(`/Patient/${patient.id}`, [{ op: 'replace', path: '/gender', value: 'other' }]);
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.gender).toBe('other');
    const history = await client.get(`/Patient/${patient.id}/_history`);
    expect(history.status).toBe(200);
    expect(history.body.entry).toHaveLength(3);
    expect((await client.delete(`/Patient/${patient.id}`)).status).toBe(200);
    expect((await client.get(`/Patient/${patient.id}`)).status).toBe(410);
  });

  it('conditional create and conditional update of an allowed type', async () => {
    const { client } = await memberWith(TYPE_LIST);
    const identifier = [{ system: 'http://example.org/mrn', value: randomUUID() }];
    const first = await client.post('/Patient', patientBody({ identifier }), { 'If-None-Exist': `identifier=http://example.org/mrn|${identifier[0].value}` });
    expect(first.status, first.text).toBe(201);
    const again = await client.post('/Patient', patientBody({ identifier }), { 'If-None-Exist': `identifier=http://example.org/mrn|${identifier[0].value}` });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const update = await client.put(`/Patient?identifier=http://example.org/mrn|${identifier[0].value}`, patientBody({ identifier, gender: 'female' }));
    expect(update.status, update.text).toBe(200);
    expect(update.body.id).toBe(first.body.id);
  });

  it('refuses every interaction on a type the policy does not name (403 naming it)', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const practitioner = await created(admin, { resourceType: 'Practitioner', name: [{ family: 'Who' }] });
    expectForbidden(await client.get(`/Practitioner/${practitioner.id}`), 'Practitioner');
    expectForbidden(await client.get('/Practitioner'), 'Practitioner');
    expectForbidden(await client.get(`/Practitioner/${practitioner.id}/_history`), 'Practitioner');
    expectForbidden(await client.post('/Practitioner', { resourceType: 'Practitioner' }), 'Practitioner');
    expectForbidden(await client.post('/Practitioner', { resourceType: 'Practitioner' }, { 'If-None-Exist': 'name=Who' }), 'Practitioner');
    expectForbidden(await client.put('/Practitioner?name=Who', { resourceType: 'Practitioner' }), 'Practitioner');
  });

  it('leaves out _include and _revinclude of types it may not read', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const practitioner = await created(admin, { resourceType: 'Practitioner', name: [{ family: 'Hidden' }] });
    const patient = await created(admin, patientBody({ generalPractitioner: [{ reference: `Practitioner/${practitioner.id}` }] }));
    const obs = await created(admin, observation(patient.id));
    await created(admin, { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${patient.id}` } });
    const res = await client.get(`/Patient?_id=${patient.id}&_include=Patient:general-practitioner&_revinclude=Observation:subject&_revinclude=Encounter:subject`);
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body, 'match')).toEqual([`Patient/${patient.id}`]);
    expect(ids(res.body, 'include')).toEqual([`Observation/${obs.id}`]);
  });

  it('counts with _summary=count', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const patient = await created(admin, patientBody());
    await created(admin, observation(patient.id));
    await created(admin, observation(patient.id));
    const res = await client.get(`/Observation?subject=Patient/${patient.id}&_summary=count`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
    expect(res.body.entry).toBeUndefined();
  });

  it('a transaction with urn:uuid references creates what it may, and refuses the read-only type as a whole', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const patientUrn = `urn:uuid:${randomUUID()}`;
    const ok = await client.post('', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: patientUrn, resource: patientBody(), request: { method: 'POST', url: 'Patient' } },
        { resource: patientBody({ link: [{ type: 'seealso', other: { reference: patientUrn } }] }), request: { method: 'POST', url: 'Patient' } },
      ],
    });
    expect(ok.status, ok.text).toBe(200);
    const [first, second] = ok.body.entry.map((e: Entry) => e.resource.id);
    expect((await client.get(`/Patient/${second}`)).body.link[0].other.reference).toBe(`Patient/${first}`);
    const refused = await client.post('', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: patientUrn, resource: patientBody(), request: { method: 'POST', url: 'Patient' } },
        { resource: observation('x', 'final', { subject: { reference: patientUrn } }), request: { method: 'POST', url: 'Observation' } },
      ],
    });
    expectForbidden(refused, 'Observation');
    expect((await admin.get('/Patient?_summary=count')).body.total).toBe(2);
  });

  it('a batch answers each entry: allowed ones work, others are 403 in their place', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const patient = await created(admin, patientBody());
    const practitioner = await created(admin, { resourceType: 'Practitioner' });
    const res = await client.post('', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { request: { method: 'GET', url: `Patient/${patient.id}` } },
        { request: { method: 'GET', url: `Practitioner/${practitioner.id}` } },
        { request: { method: 'GET', url: `Observation?subject=Patient/${patient.id}` } },
        { request: { method: 'GET', url: 'Practitioner' } },
        { resource: observation(patient.id), request: { method: 'POST', url: 'Observation' } },
        { resource: patientBody(), request: { method: 'POST', url: 'Patient' } },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const statuses = res.body.entry.map((e: Entry) => e.response!.status.split(' ')[0]);
    expect(statuses).toEqual(['200', '403', '200', '403', '403', '201']);
    expect(res.body.entry[0].resource.id).toBe(patient.id);
    expect(res.body.entry[1].resource).toBeUndefined();
    expect(res.body.entry[1].response.outcome.issue[0].details.text).toContain('Practitioner');
  });
});

describe("a member whose policy lists interactions (Medplum's AccessPolicy.resource.interaction)", () => {
  /** Observation to read and search only (Medplum's replacement of `readonly`), Patient to read and create. */
  const INTERACTIONS = [
    { resourceType: 'Observation', interaction: ['read', 'vread', 'history', 'search'] },
    { resourceType: 'Patient', interaction: ['read', 'search', 'create'] },
  ];

  it('reads and searches what the interactions list', async () => {
    const { admin, client } = await memberWith(INTERACTIONS);
    const patient = await created(admin, patientBody());
    const obs = await created(admin, observation(patient.id));
    expect((await client.get(`/Observation/${obs.id}`)).status).toBe(200);
    expect(ids((await client.get(`/Observation?subject=Patient/${patient.id}`)).body)).toEqual([`Observation/${obs.id}`]);
    expect((await client.get(`/Observation/${obs.id}/_history`)).status).toBe(200);
    expect((await client.post('/Patient', patientBody())).status).toBe(201);
  });

  it('refuses writes the interactions do not list (403 naming the type), changing nothing', async () => {
    const { admin, client } = await memberWith(INTERACTIONS);
    const patient = await created(admin, patientBody());
    const obs = await created(admin, observation(patient.id));
    await expectObservationWritesRefused(client, obs);
    expectForbidden(await client.put(`/Patient/${patient.id}`, { ...patient, gender: 'female' }), 'Patient');
    expectForbidden(await client.delete(`/Patient/${patient.id}`), 'Patient');
    expect((await admin.get(`/Observation/${obs.id}`)).body.meta.versionId).toBe(obs.meta.versionId);
    expect((await admin.get(`/Patient/${patient.id}`)).body.meta.versionId).toBe(patient.meta.versionId);
  });

  it('refuses them in batch entries and GraphQL mutations too', async () => {
    const { admin, client } = await memberWith(INTERACTIONS);
    const patient = await created(admin, patientBody());
    const batch = await client.post('', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [{ resource: observation(patient.id), request: { method: 'POST', url: 'Observation' } }],
    });
    expect(batch.body.entry[0].response.status).toMatch(/^403/);
    const mutation = await client.post(
      '/$graphql',
      { query: `mutation { PatientDelete(id: "${patient.id}") { id } }` },
      { 'Content-Type': 'application/json' },
    );
    expect(mutation.body.errors[0].extensions.resource.issue[0].code).toBe('forbidden');
    expect((await admin.get(`/Patient/${patient.id}`)).status).toBe(200);
  });

  it('a type whose interactions list no read is not readable (403)', async () => {
    const { admin, client } = await memberWith([{ resourceType: 'Patient' }, { resourceType: 'Observation', interaction: ['create'] }]);
    const patient = await created(admin, patientBody());
    const obs = await created(admin, observation(patient.id));
    expect((await client.post('/Observation', observation(patient.id))).status).toBe(201);
    expectForbidden(await client.get(`/Observation/${obs.id}`), 'Observation');
    expectForbidden(await client.get('/Observation'), 'Observation');
    const included = await client.get(`/Patient?_id=${patient.id}&_revinclude=Observation:subject`);
    expect(ids(included.body)).toEqual([`Patient/${patient.id}`]);
  });
});

describe('a member with criteria', () => {
  it('reads a resource within them and gets 404 for one outside, on read, vread and history', async () => {
    const { client, final, preliminary } = await criteriaMember();
    expect((await client.get(`/Observation/${final.id}`)).status).toBe(200);
    for (const path of [`/Observation/${preliminary.id}`, `/Observation/${preliminary.id}/_history/${preliminary.meta.versionId}`, `/Observation/${preliminary.id}/_history`]) {
      const res = await client.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.issue[0].code).toBe('not-found');
    }
  });

  it('counts only resources within them (_summary=count, _total=accurate)', async () => {
    const { client, patient } = await criteriaMember();
    expect((await client.get(`/Observation?subject=Patient/${patient.id}&_summary=count`)).body.total).toBe(1);
    const res = await client.get(`/Observation?subject=Patient/${patient.id}&_total=accurate`);
    expect(res.body.total).toBe(1);
    expect(res.body.entry).toHaveLength(1);
  });

  it('never _revincludes a resource outside them', async () => {
    const { client, patient, final } = await criteriaMember();
    const res = await client.get(`/Patient?_id=${patient.id}&_revinclude=Observation:subject`);
    expect(res.status).toBe(200);
    expect(ids(res.body, 'include')).toEqual([`Observation/${final.id}`]);
  });

  it('never shows a resource outside them through a batch read or search', async () => {
    const { client, patient, final, preliminary } = await criteriaMember();
    const res = await client.post('', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { request: { method: 'GET', url: `Observation/${preliminary.id}` } },
        { request: { method: 'GET', url: `Observation?subject=Patient/${patient.id}` } },
        { request: { method: 'GET', url: `Observation/${preliminary.id}/_history` } },
        { request: { method: 'GET', url: `Patient?_id=${patient.id}&_revinclude=Observation:subject` } },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].response.status).toMatch(/^404/);
    expect(ids(res.body.entry[1].resource)).toEqual([`Observation/${final.id}`]);
    expect(res.body.entry[2].response.status).toMatch(/^404/);
    expect(ids(res.body.entry[3].resource)).toEqual([`Patient/${patient.id}`, `Observation/${final.id}`]);
    expect(JSON.stringify(res.body)).not.toContain('preliminary');
  });

  it('creates within them, and refuses a create outside them (403) storing nothing', async () => {
    const { admin, client, patient } = await criteriaMember();
    expect((await client.post('/Observation', observation(patient.id, 'final'))).status).toBe(201);
    expectForbidden(await client.post('/Observation', observation(patient.id, 'preliminary')), 'Observation');
    expect((await admin.get(`/Observation?subject=Patient/${patient.id}&_summary=count`)).body.total).toBe(3);
  });

  it('patches within them, refuses a patch that leaves them (403), and hides one outside (404)', async () => {
    const { admin, client, final, preliminary } = await criteriaMember();
    const ok = await client.patch(`/Observation/${final.id}`, [{ op: 'add', path: '/valueString', value: 'ok' }]);
    expect(ok.status, ok.text).toBe(200);
    expectForbidden(await client.patch(`/Observation/${final.id}`, [{ op: 'replace', path: '/status', value: 'preliminary' }]), 'Observation');
    expect((await client.patch(`/Observation/${preliminary.id}`, [{ op: 'replace', path: '/status', value: 'final' }])).status).toBe(404);
    expect((await admin.get(`/Observation/${preliminary.id}`)).body.status).toBe('preliminary');
  });

  it('conditional create does not match a resource outside them', async () => {
    const { admin, client, patient } = await criteriaMember();
    const identifier = [{ system: 'http://example.org/obs', value: randomUUID() }];
    const hidden = await created(admin, observation(patient.id, 'preliminary', { identifier }));
    const res = await client.post('/Observation', observation(patient.id, 'final', { identifier }), {
      'If-None-Exist': `identifier=http://example.org/obs|${identifier[0].value}`,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.id).not.toBe(hidden.id);
    expect(res.body.status).toBe('final');
  });

  it('conditional update of a resource within them', async () => {
    const { admin, client, patient } = await criteriaMember();
    const identifier = [{ system: 'http://example.org/obs', value: randomUUID() }];
    const obs = await created(admin, observation(patient.id, 'final', { identifier }));
    const res = await client.put(`/Observation?identifier=http://example.org/obs|${identifier[0].value}`, observation(patient.id, 'final', { identifier, valueString: 'x' }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.id).toBe(obs.id);
  });

  it('deletes within them and gets 404 for one outside, which stays', async () => {
    const { admin, client, final, preliminary } = await criteriaMember();
    expect((await client.delete(`/Observation/${final.id}`)).status).toBe(200);
    expect((await client.delete(`/Observation/${preliminary.id}`)).status).toBe(404);
    expect((await admin.get(`/Observation/${preliminary.id}`)).status).toBe(200);
  });

  it('Patient/$everything leaves out resources outside them', async () => {
    const { client, patient, final, preliminary } = await criteriaMember();
    const res = await client.get(`/Patient/${patient.id}/$everything`);
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body).sort()).toEqual([`Observation/${final.id}`, `Patient/${patient.id}`].sort());
    expect(res.text).not.toContain(preliminary.id);
  });

  it('Patient/$everything leaves out types the policy does not allow', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const patient = await created(admin, patientBody());
    const obs = await created(admin, observation(patient.id));
    const encounter = await created(admin, { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${patient.id}` } });
    const res = await client.get(`/Patient/${patient.id}/$everything`);
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body).sort()).toEqual([`Observation/${obs.id}`, `Patient/${patient.id}`].sort());
    expect(res.text).not.toContain(encounter.id);
  });
});

describe('GraphQL by a member with a policy', () => {
  const graphql = (client: ProjectClient, query: string, variables?: Record<string, unknown>) =>
    client.post('/$graphql', { query, variables }, { 'Content-Type': 'application/json' });

  it('lists and reads within the criteria, resolving references, and hides the rest', async () => {
    const { client, patient, final, preliminary } = await criteriaMember();
    const res = await graphql(
      client,
      `{ ObservationList(subject: "Patient/${patient.id}") { id status subject { reference resource { ... on Patient { id } } } }
         hidden: Observation(id: "${preliminary.id}") { id } }`,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.ObservationList).toEqual([{ id: final.id, status: 'final', subject: { reference: `Patient/${patient.id}`, resource: { id: patient.id } } }]);
    expect(res.body.data.hidden).toBeNull();
    expect(res.text).not.toContain('"preliminary"');
  });

  it('leaves out reverse-referenced resources outside the criteria in list fields', async () => {
    const { client, patient, final } = await criteriaMember();
    const res = await graphql(client, `{ Patient(id: "${patient.id}") { id ObservationList(_reference: subject) { id status } } }`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.Patient.ObservationList).toEqual([{ id: final.id, status: 'final' }]);
  });

  it('does not resolve a reference to a type the policy does not allow', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const practitioner = await created(admin, { resourceType: 'Practitioner', name: [{ family: 'Secret' }] });
    const patient = await created(admin, patientBody({ generalPractitioner: [{ reference: `Practitioner/${practitioner.id}` }] }));
    const res = await graphql(client, `{ Patient(id: "${patient.id}") { id generalPractitioner { reference resource { ... on Practitioner { name { family } } } } } }`);
    expect(res.status, res.text).toBe(200);
    expect(res.text).not.toContain('Secret');
    expect(res.body.data.Patient.id).toBe(patient.id);
  });

  it('refuses a list of a type the policy does not allow, naming it', async () => {
    const { client } = await memberWith(TYPE_LIST);
    const res = await graphql(client, '{ PractitionerList { id } }');
    expect(res.status).toBe(200);
    expect(res.body.errors[0].message).toContain('Practitioner');
    expect(res.body.data?.PractitionerList ?? null).toBeNull();
  });

  it('mutations: creates an allowed type, refuses the read-only one', async () => {
    const { admin, client } = await memberWith(TYPE_LIST);
    const ok = await graphql(client, 'mutation { PatientCreate(res: { resourceType: "Patient", gender: "female" }) { id gender } }');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data.PatientCreate.gender).toBe('female');
    const refused = await graphql(
      client,
      `mutation { ObservationCreate(res: { resourceType: "Observation", status: "final", code: { text: "x" }, subject: { reference: "Patient/${ok.body.data.PatientCreate.id}" } }) { id } }`,
    );
    expect(refused.body.errors[0].message).toContain('Observation');
    expect((await admin.get('/Observation?_summary=count')).body.total).toBe(0);
  });
});

describe('a patient member (%patient policy)', () => {
  const PASSWORD = 'correct horse battery staple';

  async function patientMember() {
    const admin = api.newProject();
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'patient',
      resource: [
        { resourceType: 'Patient', criteria: 'Patient?_id=%patient.id', readonly: true },
        { resourceType: 'Observation', compartment: { reference: '%patient' } },
        { resourceType: 'Binary' },
      ],
    });
    expect(policy.status, policy.text).toBe(201);
    const email = `${randomUUID()}@example.org`;
    const invited = await sendJson(
      api,
      'POST',
      `/admin/projects/${admin.projectId}/invite`,
      { resourceType: 'Patient', firstName: 'Pat', lastName: 'Ient', externalId: randomUUID(), email, password: PASSWORD, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } },
      bearer(await admin.token()),
    );
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    const token = await tokenRequest(api, { grant_type: 'password', username: email, password: PASSWORD });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    const client = projectClient(api.fhir, admin.projectId, async () => token.body.access_token);
    const self = invited.body.profile.reference.split('/')[1] as string;
    const other = await created(admin, patientBody());
    const mine = await created(admin, observation(self));
    const theirs = await created(admin, observation(other.id));
    return { admin, client, email, token: token.body.access_token as string, self, other, mine, theirs };
  }

  it('reads their own record and compartment, and nobody else\'s', async () => {
    const { client, self, other, mine, theirs } = await patientMember();
    expect((await client.get(`/Patient/${self}`)).status).toBe(200);
    expect((await client.get(`/Patient/${other.id}`)).status).toBe(404);
    expect((await client.get(`/Observation/${mine.id}`)).status).toBe(200);
    expect((await client.get(`/Observation/${theirs.id}`)).status).toBe(404);
    const search = await client.get('/Observation?_total=accurate');
    expect(ids(search.body)).toEqual([`Observation/${mine.id}`]);
    expect(search.body.total).toBe(1);
  });

  it('records an Observation about themselves, and not about another patient', async () => {
    const { client, self, other } = await patientMember();
    expect((await client.post('/Observation', observation(self))).status).toBe(201);
    const res = await client.post('/Observation', observation(other.id));
    expectForbidden(res, 'Observation');
  });

  it('$everything of their own record only', async () => {
    const { client, self, other, mine, theirs } = await patientMember();
    const res = await client.get(`/Patient/${self}/$everything`);
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body).sort()).toEqual([`Observation/${mine.id}`, `Patient/${self}`].sort());
    expect(res.text).not.toContain(theirs.id);
    expect((await client.get(`/Patient/${other.id}/$everything`)).status).toBe(404);
  });

  it('history of their Observation, 404 for another patient\'s', async () => {
    const { client, mine, theirs } = await patientMember();
    expect((await client.get(`/Observation/${mine.id}/_history`)).body.entry).toHaveLength(1);
    expect((await client.get(`/Observation/${theirs.id}/_history`)).status).toBe(404);
  });

  it('a transaction recording their Observation with a urn:uuid Binary', async () => {
    const { client, self } = await patientMember();
    const urn = `urn:uuid:${randomUUID()}`;
    const res = await client.post('', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: urn, resource: { resourceType: 'Binary', contentType: 'text/plain', data: Buffer.from('hi').toString('base64') }, request: { method: 'POST', url: 'Binary' } },
        { resource: observation(self, 'final', { derivedFrom: [{ reference: urn }] }), request: { method: 'POST', url: 'Observation' } },
        { request: { method: 'GET', url: `Patient/${self}` } },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry.map((e: Entry) => e.response!.status.split(' ')[0])).toEqual(['201', '201', '200']);
  });

  it('Binary create and read', async () => {
    const { client } = await patientMember();
    const res = await api.raw(`/fhir/R4/Binary`, { method: 'POST', headers: { ...(await client.authHeaders()), 'Content-Type': 'text/plain' }, body: 'hello' });
    expect(res.status).toBe(201);
    const binary = (await res.json()) as { id: string };
    const read = await api.raw(`/fhir/R4/Binary/${binary.id}`, { headers: { ...(await client.authHeaders()), Accept: 'text/plain' } });
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('hello');
  });

  it('/auth/me shows the policy with %patient replaced', async () => {
    const { token, self } = await patientMember();
    const res = await getJson(api, '/auth/me', bearer(token));
    expect(res.status).toBe(200);
    expect(res.body.profile).toMatchObject({ resourceType: 'Patient', id: self });
    expect(res.body.accessPolicy.resource[0].criteria).toBe(`Patient?_id=${self}`);
    expect(res.body.accessPolicy.resource[1].compartment).toEqual({ reference: `Patient/${self}` });
  });

  it('GraphQL: their own Patient with its Observations, none of another patient', async () => {
    const { client, self, other, mine, theirs } = await patientMember();
    const res = await client.post(
      '/$graphql',
      { query: `{ Patient(id: "${self}") { id ObservationList(_reference: subject) { id } } ObservationList { id } other: Patient(id: "${other.id}") { id } }` },
      { 'Content-Type': 'application/json' },
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.Patient.ObservationList).toEqual([{ id: mine.id }]);
    expect(res.body.data.ObservationList).toEqual([{ id: mine.id }]);
    expect(res.body.data.other).toBeNull();
    expect(res.text).not.toContain(theirs.id);
  });
});

describe('Binary by a member whose policy narrows every type to a patient (* with a compartment)', () => {
  async function compartmentMember() {
    const admin = api.newProject();
    const mine = await created(admin, patientBody());
    const other = await created(admin, patientBody());
    const member = await memberWith([{ resourceType: '*', compartment: { reference: `Patient/${mine.id}` } }], admin);
    return { ...member, mine, other };
  }

  const upload = async (client: ProjectClient, headers: Record<string, string> = {}) =>
    api.raw('/fhir/R4/Binary', { method: 'POST', headers: { ...(await client.authHeaders()), 'Content-Type': 'text/plain', ...headers }, body: 'hello' });

  it("uploads a Binary whose securityContext is the patient (X-Security-Context, MedplumClient's createBinary) and reads it back", async () => {
    const { client, mine } = await compartmentMember();
    const res = await upload(client, { 'X-Security-Context': `Patient/${mine.id}` });
    expect(res.status).toBe(201);
    const binary = (await res.json()) as { id: string; securityContext: { reference: string } };
    expect(binary.securityContext.reference).toBe(`Patient/${mine.id}`);
    const read = await api.raw(`/fhir/R4/Binary/${binary.id}`, { headers: { ...(await client.authHeaders()), Accept: 'text/plain' } });
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('hello');
    // It is no part of the patient's record.
    expect(ids((await client.get(`/Patient/${mine.id}/$everything`)).body)).toEqual([`Patient/${mine.id}`]);
  });

  it('replaces the bytes of its Binary by a raw PUT without X-Security-Context: the Binary stays in the compartment', async () => {
    const { client, mine } = await compartmentMember();
    const made = (await (await upload(client, { 'X-Security-Context': `Patient/${mine.id}` })).json()) as { id: string };
    const put = await api.raw(`/fhir/R4/Binary/${made.id}`, { method: 'PUT', headers: { ...(await client.authHeaders()), 'Content-Type': 'text/plain' }, body: 'again' });
    expect(put.status, await put.clone().text()).toBe(200);
    expect(((await put.json()) as { securityContext: unknown }).securityContext).toEqual({ reference: `Patient/${mine.id}` });
    const read = await api.raw(`/fhir/R4/Binary/${made.id}`, { headers: { ...(await client.authHeaders()), Accept: 'text/plain' } });
    expect(await read.text()).toBe('again');
  });

  it('a Binary of another patient is hidden (404)', async () => {
    const { admin, client, other } = await compartmentMember();
    const theirs = await api.raw('/fhir/R4/Binary', {
      method: 'POST',
      headers: { ...(await admin.authHeaders()), 'Content-Type': 'text/plain', 'X-Security-Context': `Patient/${other.id}` },
      body: 'secret',
    });
    expect(theirs.status).toBe(201);
    const { id } = (await theirs.json()) as { id: string };
    const read = await api.raw(`/fhir/R4/Binary/${id}`, { headers: { ...(await client.authHeaders()), Accept: 'text/plain' } });
    expect(read.status).toBe(404);
    expect(await read.text()).not.toContain('secret');
  });

  it('refuses (403) and stores nothing for an upload outside the compartment, rather than storing what it could not read back', async () => {
    const { admin, client, other } = await compartmentMember();
    const contexts: Record<string, string>[] = [{}, { 'X-Security-Context': `Patient/${other.id}` }];
    for (const headers of contexts) {
      const res = await upload(client, headers);
      expect(res.status).toBe(403);
      const body = (await res.json()) as { issue: { code: string; details: { text: string } }[] };
      expect(body.issue[0].code).toBe('forbidden');
      expect(body.issue[0].details.text).toContain('Binary');
    }
    const json = await client.post('/Binary', { resourceType: 'Binary', contentType: 'text/plain', data: Buffer.from('x').toString('base64') });
    expectForbidden(json, 'Binary');
    expect((await admin.get('/Binary?_summary=count')).body.total).toBe(0);
  });
});

describe('a member with * and a read-only type', () => {
  const STAR = [{ resourceType: '*' }, { resourceType: 'Observation', readonly: true }];

  it('writes any type but the read-only one, and searches the system without _type', async () => {
    const { admin, client } = await memberWith(STAR);
    const patient = await created(client, patientBody());
    await created(client, { resourceType: 'Practitioner' });
    expectForbidden(await client.post('/Observation', observation(patient.id)), 'Observation');
    await created(admin, observation(patient.id));
    const res = await client.get(`/?_type=Observation,Patient&_total=accurate`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('a system search without _type is refused (403) when the policy narrows a type by criteria, never leaking outside them', async () => {
    const { admin, client } = await memberWith([{ resourceType: '*' }, { resourceType: 'Observation', criteria: 'Observation?status=final' }]);
    const patient = await created(admin, patientBody());
    const final = await created(admin, observation(patient.id, 'final'));
    const preliminary = await created(admin, observation(patient.id, 'preliminary'));
    for (const path of ['/?_count=100', '/?_summary=count', `/?_id=${preliminary.id}`]) {
      const res = await client.get(path);
      expectForbidden(res, '_type');
      expect(res.text).not.toContain('preliminary');
    }
    const typed = await client.get('/?_type=Observation&_total=accurate');
    expect(typed.status).toBe(200);
    expect(typed.body.total).toBe(1);
    expect(ids(typed.body)).toEqual([`Observation/${final.id}`]);
  });

  it('a system search without _type is refused (403) under a * rule with a compartment', async () => {
    const admin = api.newProject();
    const mine = await created(admin, patientBody());
    const other = await created(admin, patientBody());
    const { client } = await memberWith([{ resourceType: '*', compartment: { reference: `Patient/${mine.id}` } }], admin);
    const theirs = await created(admin, observation(other.id));
    const res = await client.get('/?_count=100');
    expectForbidden(res, '_type');
    expect(res.text).not.toContain(theirs.id);
    const typed = await client.get('/?_type=Observation,Patient');
    expect(typed.status, typed.text).toBe(200);
    expect(ids(typed.body)).toEqual([`Patient/${mine.id}`]);
  });

  it('a system search without _type works under a * rule that no rule narrows', async () => {
    const { admin, client } = await memberWith(STAR);
    const patient = await created(admin, patientBody());
    const res = await client.get(`/?_id=${patient.id}`);
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body)).toEqual([`Patient/${patient.id}`]);
  });

  it("does not reach the project's accounts (Login, ProjectMembership, Project, User) of a member who is not admin, as Medplum's * does not", async () => {
    const { admin, client, clientId } = await memberWith(STAR);
    for (const type of ['Login', 'ProjectMembership', 'Project', 'User']) {
      expectForbidden(await client.get(`/${type}`), type);
    }
    const membership = (await admin.get(`/ProjectMembership?profile=ClientApplication/${clientId}`)).body.entry[0].resource;
    expectForbidden(await client.get(`/ProjectMembership/${membership.id}`), 'ProjectMembership');
    const everything = await client.get('/?_count=1000');
    expect(everything.status).toBe(200);
    const types = new Set(ids(everything.body).map((id) => id.split('/')[0]));
    for (const type of ['Login', 'ProjectMembership', 'Project', 'User']) expect(types.has(type), type).toBe(false);
    expect((await client.get('/?_summary=count')).body.total).toBe(everything.body.entry.length);
    const gql = await client.post('/$graphql', { query: '{ LoginList { id remoteAddress } }' }, { 'Content-Type': 'application/json' });
    expect(gql.body.errors[0].message).toContain('Login');
  });

  it('nor when the policy names them (Medplum drops such rules for members who are not admins)', async () => {
    const { client } = await memberWith([...STAR, { resourceType: 'ProjectMembership', readonly: true }]);
    expectForbidden(await client.get('/ProjectMembership'), 'ProjectMembership');
  });

  it('$validate of any type', async () => {
    const { client } = await memberWith(STAR);
    const res = await client.post('/Observation/$validate', { resourceType: 'Observation', status: 'final', code: { text: 'x' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('still may not write admin types (403)', async () => {
    const { client } = await memberWith(STAR);
    expectForbidden(await client.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'x' }), 'AccessPolicy');
  });
});

describe('MedplumClient as a member with a policy', () => {
  async function medplumMember(resource: unknown[]) {
    const member = await memberWith(resource);
    const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
    await medplum.startClientLogin(member.clientId, member.secret);
    return { ...member, medplum };
  }

  it('searchResources, readReference and graphql within the criteria', async () => {
    const { admin, medplum } = await medplumMember(CRITERIA);
    const patient = await created(admin, patientBody());
    const final = await created(admin, observation(patient.id, 'final'));
    await created(admin, observation(patient.id, 'preliminary'));
    const found = await medplum.searchResources('Observation', { subject: `Patient/${patient.id}` });
    expect(found.map((o) => o.id)).toEqual([final.id]);
    const subject = await medplum.readReference(found[0].subject as { reference: string });
    expect(subject.id).toBe(patient.id);
    const gql = await medplum.graphql(`{ ObservationList(subject: "Patient/${patient.id}") { id } }`);
    expect(gql.data.ObservationList).toEqual([{ id: final.id }]);
  });

  it('executeBatch with a GET and a create', async () => {
    const { medplum } = await medplumMember(TYPE_LIST);
    const urn = `urn:uuid:${randomUUID()}`;
    const res = await medplum.executeBatch({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: urn, resource: { resourceType: 'Patient', gender: 'female' }, request: { method: 'POST', url: 'Patient' } },
        { request: { method: 'GET', url: 'Patient?gender=female' } },
      ],
    });
    expect(res.entry?.map((e: Entry) => e.response?.status.split(' ')[0])).toEqual(['201', '200']);
  });

  it('readResource of a forbidden type rejects with the 403 OperationOutcome', async () => {
    const { admin, medplum } = await medplumMember(TYPE_LIST);
    const practitioner = await created(admin, { resourceType: 'Practitioner' });
    await expect(medplum.readResource('Practitioner', practitioner.id)).rejects.toMatchObject({
      outcome: { resourceType: 'OperationOutcome', issue: [{ code: 'forbidden' }] },
    });
  });
});
