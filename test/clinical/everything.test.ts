import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient, type TestResponse } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { create, link, pathOf } from '../search-api/helpers.js';
import { graphql } from '../graphql/resource-helpers.js';
import { observationOf, patientUser } from '../auth/smart-helpers.js';

/** Patient/$everything: a patient's record (compartment + referenced resources), paged by a keyset cursor. */

const api = await useTestServer();

type Json = any;
const ref = (reference: string) => ({ reference });

/** `Type/id` of each entry, in order, with its search mode. */
function entries(res: TestResponse<Json>): { key: string; mode: string }[] {
  expect(res.status, res.text).toBe(200);
  return (res.body.entry ?? []).map((e: Json) => ({ key: `${e.resource.resourceType}/${e.resource.id}`, mode: e.search?.mode }));
}

const keys = (res: TestResponse<Json>) => entries(res).map((e) => e.key).sort();

/** A patient with two Observations (one performed by a Practitioner), a Condition, and another patient with an Observation. */
async function record(p: ProjectClient) {
  const practitioner = `Practitioner/${await create(p, { resourceType: 'Practitioner', name: [{ family: 'Who' }] })}`;
  const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'One' }] });
  const subject = ref(`Patient/${patient}`);
  const observations = [
    `Observation/${await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'a' }, subject, effectiveDateTime: '2020-03-01', performer: [ref(practitioner)] })}`,
    `Observation/${await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'b' }, subject, effectiveDateTime: '2022-06-01' })}`,
  ];
  const condition = `Condition/${await create(p, { resourceType: 'Condition', subject, recordedDate: '2021-01-10' })}`;
  const other = await create(p, { resourceType: 'Patient', name: [{ family: 'Two' }] });
  const otherPractitioner = `Practitioner/${await create(p, { resourceType: 'Practitioner' })}`;
  const othersObservation = `Observation/${await create(p, {
    resourceType: 'Observation',
    status: 'final',
    code: { text: 'c' },
    subject: ref(`Patient/${other}`),
    performer: [ref(otherPractitioner)],
  })}`;
  return { patient, practitioner, observations, condition, other, othersObservation, otherPractitioner };
}

/** A client of a new member of the project whose AccessPolicy has these resource rules. */
async function memberWithPolicy(p: ProjectClient, resource: Json[]): Promise<ProjectClient> {
  const policy = await create(p, { resourceType: 'AccessPolicy', name: 'policy', resource });
  const member = await addMemberClient(api, p, { accessPolicy: `AccessPolicy/${policy}` });
  return projectClient(api.fhir, p.projectId, async () => member.token);
}

/** Every entry of every page, following `next` links. */
async function walk(p: ProjectClient, path: string): Promise<{ entries: { key: string; mode: string }[]; pages: number[] }> {
  const all: { key: string; mode: string }[] = [];
  const pages: number[] = [];
  let next: string | undefined = path;
  while (next) {
    const res = await p.get(next);
    const page = entries(res);
    all.push(...page);
    pages.push(page.length);
    const url = link(res, 'next');
    next = url ? pathOf(url) : undefined;
    expect(pages.length).toBeLessThan(50);
  }
  return { entries: all, pages };
}

describe('Patient/$everything', () => {
  it('answers a searchset Bundle with the patient and its compartment as matches', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await p.get(`/Patient/${r.patient}/$everything`);
    expect(res.body.resourceType).toBe('Bundle');
    expect(res.body.type).toBe('searchset');
    const matches = entries(res).filter((e) => e.mode === 'match').map((e) => e.key).sort();
    expect(matches).toEqual([...r.observations, r.condition, `Patient/${r.patient}`].sort());
    expect(res.body.entry[0].fullUrl).toMatch(/\/fhir\/R4\/[A-Za-z]+\/[^/]+$/);
  });

  it('includes the Practitioner a compartment resource references, as include', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await p.get(`/Patient/${r.patient}/$everything`);
    expect(entries(res).filter((e) => e.mode === 'include').map((e) => e.key)).toEqual([r.practitioner]);
  });

  it("never includes another patient's data", async () => {
    const p = api.newProject();
    const r = await record(p);
    const all = keys(await p.get(`/Patient/${r.patient}/$everything`));
    expect(all).not.toContain(`Patient/${r.other}`);
    expect(all).not.toContain(r.othersObservation);
    expect(all).not.toContain(r.otherPractitioner);
  });

  it('walks the whole record by next links, each entry once, _count counting referenced ones too', async () => {
    const p = api.newProject();
    const r = await record(p);
    const subject = ref(`Patient/${r.patient}`);
    const more: string[] = [];
    for (let i = 0; i < 6; i++) {
      const org = `Organization/${await create(p, { resourceType: 'Organization', name: `org ${i}` })}`;
      // Every Encounter also names the Practitioner: it is still listed once.
      const participant = [{ individual: ref(r.practitioner) }];
      more.push(org, `Encounter/${await create(p, { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject, serviceProvider: ref(org), participant })}`);
    }
    const { entries: walked, pages } = await walk(p, `/Patient/${r.patient}/$everything?_count=3`);
    const expected = [`Patient/${r.patient}`, ...r.observations, r.condition, r.practitioner, ...more].sort();
    expect(walked.map((e) => e.key).sort()).toEqual(expected);
    expect(new Set(walked.map((e) => e.key)).size).toBe(walked.length);
    expect(pages.slice(0, -1).every((size) => size === 3)).toBe(true);
    // Matches come first, then the referenced resources.
    const firstInclude = walked.findIndex((e) => e.mode === 'include');
    expect(walked.slice(firstInclude).every((e) => e.mode === 'include')).toBe(true);
    expect(walked.filter((e) => e.mode === 'include')).toHaveLength(7);
  });

  it('lists the patient first, then the rest of its compartment, on pages of one as of any size', async () => {
    const p = api.newProject();
    const r = await record(p);
    const first = entries(await p.get(`/Patient/${r.patient}/$everything`));
    expect(first[0]).toEqual({ key: `Patient/${r.patient}`, mode: 'match' });
    const { entries: walked } = await walk(p, `/Patient/${r.patient}/$everything?_count=1`);
    expect(walked.map((e) => e.key)).toEqual([`Patient/${r.patient}`, r.condition, ...[...r.observations].sort(), r.practitioner]);
  });

  it('keeps only the types of _type', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await p.get(`/Patient/${r.patient}/$everything?_type=Condition,Practitioner`);
    expect(keys(res)).toEqual([r.condition, r.practitioner].sort());
  });

  it('keeps only resources changed at or after _since', async () => {
    const p = api.newProject();
    const r = await record(p);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const later = await p.post('/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'new' }, subject: ref(`Patient/${r.patient}`) });
    const since = later.body.meta.lastUpdated as string;
    const res = await p.get(`/Patient/${r.patient}/$everything?_since=${encodeURIComponent(since)}`);
    expect(keys(res)).toEqual([`Observation/${later.body.id}`]);
  });

  it('restricts resources with a clinical date to start/end and keeps the undated ones', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await p.get(`/Patient/${r.patient}/$everything?start=2021-01-01&end=2021-12-31`);
    // The Condition (recorded 2021) stays, both Observations (2020, 2022) go, the Patient stays;
    // the Practitioner was referenced by an Observation outside the dates only.
    expect(keys(res)).toEqual([r.condition, `Patient/${r.patient}`].sort());
  });

  it('never shows a type the AccessPolicy does not allow', async () => {
    const p = api.newProject();
    const r = await record(p);
    const member = await memberWithPolicy(p, [{ resourceType: 'Patient' }, { resourceType: 'Observation' }]);
    const res = await member.get(`/Patient/${r.patient}/$everything`);
    expect(keys(res)).toEqual([...r.observations, `Patient/${r.patient}`].sort());
  });

  it('applies the AccessPolicy criteria of a type', async () => {
    const p = api.newProject();
    const r = await record(p);
    const member = await memberWithPolicy(p, [
      { resourceType: 'Patient' },
      { resourceType: 'Practitioner' },
      { resourceType: 'Observation', criteria: 'Observation?code:text=b' },
    ]);
    const res = await member.get(`/Patient/${r.patient}/$everything`);
    // The Observation performed by the Practitioner is hidden: so is what only it references.
    expect(keys(res)).toEqual([r.observations[1], `Patient/${r.patient}`].sort());
  });

  it('with SMART patient/ scopes, answers the launch patient\'s record and 404 for another patient', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const mine = await create(admin, observationOf(user.patientId));
    const other = await create(admin, { resourceType: 'Patient' });
    await create(admin, observationOf(other));
    const { client } = await user.client('patient/*.rs launch/patient');
    expect(keys(await client.get(`/Patient/${user.patientId}/$everything`))).toEqual([`Observation/${mine}`, `Patient/${user.patientId}`].sort());
    expect((await client.get(`/Patient/${other}/$everything`)).status).toBe(404);
    expect(keys(await client.get('/Patient/$everything'))).toEqual([`Observation/${mine}`, `Patient/${user.patientId}`].sort());
  });

  it('is 403 at type level for a caller whose AccessPolicy does not allow Patient', async () => {
    const p = api.newProject();
    await record(p);
    const member = await memberWithPolicy(p, [{ resourceType: 'Observation' }]);
    const res = await member.get('/Patient/$everything');
    expect(res.status).toBe(403);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('walks every patient the caller may see at type level', async () => {
    const p = api.newProject();
    const r = await record(p);
    const { entries: walked } = await walk(p, '/Patient/$everything?_count=2');
    const all = walked.map((e) => e.key);
    expect(new Set(all)).toEqual(
      new Set([`Patient/${r.patient}`, ...r.observations, r.condition, r.practitioner, `Patient/${r.other}`, r.othersObservation, r.otherPractitioner]),
    );
    expect(all).toHaveLength(8);
  });

  it('starts each patient’s record with the patient at type level', async () => {
    const p = api.newProject();
    const r = await record(p);
    const { entries: walked } = await walk(p, '/Patient/$everything?_count=2');
    const all = walked.map((e) => e.key);
    const mineFirst = all[0] === `Patient/${r.patient}`;
    expect(all[0]).toBe(mineFirst ? `Patient/${r.patient}` : `Patient/${r.other}`);
    // The second record begins right after the first: five entries for r.patient's, three for the other's.
    expect(all.indexOf(mineFirst ? `Patient/${r.other}` : `Patient/${r.patient}`)).toBe(mineFirst ? 5 : 3);
  });

  it('answers the same to POST with a Parameters body', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await p.post(`/Patient/${r.patient}/$everything`, {
      resourceType: 'Parameters',
      parameter: [{ name: '_type', valueString: 'Observation' }],
    });
    expect(keys(res)).toEqual([...r.observations].sort());
  });

  it('is the GraphQL field PatientEverything', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await graphql(api, p, `{ PatientEverything(id: "${r.patient}", _type: ["Condition"]) { type entry { search { mode } resource { id } } } }`);
    expect(res.status).toBe(200);
    const bundle = (res.body.data as Json).PatientEverything;
    expect(bundle.type).toBe('searchset');
    expect(bundle.entry).toEqual([{ search: { mode: 'match' }, resource: { id: r.condition.split('/')[1] } }]);
  });

  it('is 404 for a patient that does not exist', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient/missing/$everything');
    expect(res.status).toBe(404);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('refuses an altered cursor with 400', async () => {
    const p = api.newProject();
    const r = await record(p);
    const res = await p.get(`/Patient/${r.patient}/$everything?_cursor=abc.def`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].diagnostics ?? res.body.issue[0].details?.text).toMatch(/_cursor/);
  });

  it('refuses a cursor made for other parameters with 400', async () => {
    const p = api.newProject();
    const r = await record(p);
    const first = await p.get(`/Patient/${r.patient}/$everything?_count=1`);
    const cursor = new URL(link(first, 'next')!).searchParams.get('_cursor')!;
    const res = await p.get(`/Patient/${r.patient}/$everything?_count=1&_type=Observation&_cursor=${cursor}`);
    expect(res.status).toBe(400);
  });

  it('refuses an unknown _type and a _count out of range with 400', async () => {
    const p = api.newProject();
    const r = await record(p);
    expect((await p.get(`/Patient/${r.patient}/$everything?_type=Nope`)).status).toBe(400);
    expect((await p.get(`/Patient/${r.patient}/$everything?_count=0`)).status).toBe(400);
    expect((await p.get(`/Patient/${r.patient}/$everything?_count=1001`)).status).toBe(400);
  });
});
