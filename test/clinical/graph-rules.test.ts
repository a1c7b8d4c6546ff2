import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient, type TestResponse } from '../helpers/server.js';
import { create } from '../search-api/helpers.js';
import { keys, ref } from './graph-helpers.js';
import { constraintOn, storeProfile } from '../profiles/helpers.js';

/** `$graph`: a link target's compartment rules and profile, and the GraphDefinition's own profile. */

const api = await useTestServer();

type Json = any;

function warnings(res: TestResponse<Json>): Json[] {
  const outcome = (res.body.entry ?? []).find((e: Json) => e.resource.resourceType === 'OperationOutcome');
  return outcome?.resource.issue ?? [];
}

/** A panel Observation of patient A whose members are an Observation of A and one of B. */
async function panel(p: ProjectClient) {
  const a = `Patient/${await create(p, { resourceType: 'Patient' })}`;
  const b = `Patient/${await create(p, { resourceType: 'Patient' })}`;
  const observation = (subject: string, extra: Json = {}) => ({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: ref(subject), ...extra });
  const sameMember = `Observation/${await create(p, observation(a))}`;
  const otherMember = `Observation/${await create(p, observation(b))}`;
  const root = `Observation/${await create(p, observation(a, { hasMember: [ref(sameMember), ref(otherMember)] }))}`;
  return { a, b, root, sameMember, otherMember };
}

/** A graph from an Observation to its members, under one compartment rule. */
async function membersGraph(p: ProjectClient, compartment: Json[]): Promise<string> {
  const url = `https://example.org/GraphDefinition/members-${randomUUID()}`;
  await create(p, { resourceType: 'GraphDefinition', name: 'members', url, status: 'active', start: 'Observation', link: [{ path: 'Observation.hasMember', target: [{ type: 'Observation', compartment }] }] });
  return url;
}

const graphOf = (p: ProjectClient, start: string, url: string) => p.get(`/${start}/$graph?graph=${encodeURIComponent(url)}`);

describe('$graph compartment rules', () => {
  it('leaves out a resource in another patient\'s compartment under an identical requirement, with a warning naming it', async () => {
    const p = api.newProject();
    const d = await panel(p);
    const url = await membersGraph(p, [{ use: 'requirement', code: 'Patient', rule: 'identical' }]);
    const res = await graphOf(p, d.root, url);
    expect(keys(res)).toEqual([d.root, d.sameMember, expect.stringMatching(/^OperationOutcome\//)]);
    expect(warnings(res)).toEqual([
      expect.objectContaining({ severity: 'warning', code: 'business-rule', expression: ['GraphDefinition.link[0].target[0].compartment[0]'] }),
    ]);
    expect(warnings(res)[0].details.text).toContain(d.otherMember);
  });

  it('leaves it out without a warning under a condition', async () => {
    const p = api.newProject();
    const d = await panel(p);
    const url = await membersGraph(p, [{ use: 'condition', code: 'Patient', rule: 'matching' }]);
    expect(keys(await graphOf(p, d.root, url))).toEqual([d.root, d.sameMember]);
  });

  it('keeps only resources of other patients under the different rule', async () => {
    const p = api.newProject();
    const d = await panel(p);
    const url = await membersGraph(p, [{ use: 'condition', code: 'Patient', rule: 'different' }]);
    expect(keys(await graphOf(p, d.root, url))).toEqual([d.root, d.otherMember]);
  });

  it('evaluates a custom rule on the resource, with %source the resource the link starts from', async () => {
    const p = api.newProject();
    const d = await panel(p);
    const url = await membersGraph(p, [{ use: 'condition', code: 'Patient', rule: 'custom', expression: 'subject.reference != %source.subject.reference' }]);
    expect(keys(await graphOf(p, d.root, url))).toEqual([d.root, d.otherMember]);
  });

  it('is 400 for a compartment other than Patient, naming the element', async () => {
    const p = api.newProject();
    const d = await panel(p);
    const url = await membersGraph(p, [{ use: 'condition', code: 'Encounter', rule: 'identical' }]);
    const res = await graphOf(p, d.root, url);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['GraphDefinition.link[0].target[0].compartment[0].code']);
  });
});

/** A patient with an Observation that has a note and one that has none, and a profile of Observation requiring a note. */
async function notedObservations(p: ProjectClient) {
  const patient = `Patient/${await create(p, { resourceType: 'Patient', gender: 'female' })}`;
  const observation = (extra: Json) => ({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: ref(patient), ...extra });
  const noted = `Observation/${await create(p, observation({ note: [{ text: 'checked' }] }))}`;
  const bare = `Observation/${await create(p, observation({}))}`;
  const profile = await storeProfile(p, constraintOn('Observation', `https://example.org/fhir/StructureDefinition/noted-${randomUUID()}`, [{ id: 'Observation.note', path: 'Observation.note', min: 1 }]));
  return { patient, noted, bare, profile };
}

async function observationsGraph(p: ProjectClient, target: Json, extra: Json = {}): Promise<string> {
  const url = `https://example.org/GraphDefinition/observations-${randomUUID()}`;
  await create(p, { resourceType: 'GraphDefinition', name: 'observations', url, status: 'active', start: 'Patient', link: [{ target: [{ type: 'Observation', params: 'patient={ref}', ...target }] }], ...extra });
  return url;
}

describe('$graph profiles', () => {
  it("leaves out a target that does not conform to the target's profile, with a warning", async () => {
    const p = api.newProject();
    const d = await notedObservations(p);
    const res = await graphOf(p, d.patient, await observationsGraph(p, { profile: d.profile }));
    expect(keys(res)).toEqual([d.patient, d.noted, expect.stringMatching(/^OperationOutcome\//)]);
    expect(warnings(res)).toHaveLength(1);
    expect(warnings(res)[0].expression).toEqual(['GraphDefinition.link[0].target[0].profile']);
    expect(warnings(res)[0].details.text).toContain(d.bare);
  });

  it('keeps every target of a profile it does not know, and says it did not check them', async () => {
    const p = api.newProject();
    const d = await notedObservations(p);
    const res = await graphOf(p, d.patient, await observationsGraph(p, { profile: 'https://example.org/fhir/StructureDefinition/unknown' }));
    expect([...keys(res)].slice(0, 3).sort()).toEqual([d.patient, d.noted, d.bare].sort());
    expect(warnings(res).map((found: Json) => found.details.text)).toEqual([expect.stringContaining('is not known here')]);
  });

  it("is 400 when the starting resource does not conform to the GraphDefinition's profile", async () => {
    const p = api.newProject();
    const d = await notedObservations(p);
    const strict = await storeProfile(p, constraintOn('Patient', `https://example.org/fhir/StructureDefinition/named-${randomUUID()}`, [{ id: 'Patient.name', path: 'Patient.name', min: 1 }]));
    const res = await graphOf(p, d.patient, await observationsGraph(p, {}, { profile: strict }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['GraphDefinition.profile']);
    expect(res.body.issue[0].details.text).toContain(strict);
  });

  it("follows the links from a starting resource that conforms to the GraphDefinition's profile", async () => {
    const p = api.newProject();
    const d = await notedObservations(p);
    const gendered = await storeProfile(p, constraintOn('Patient', `https://example.org/fhir/StructureDefinition/gendered-${randomUUID()}`, [{ id: 'Patient.gender', path: 'Patient.gender', min: 1 }]));
    const res = await graphOf(p, d.patient, await observationsGraph(p, {}, { profile: gendered }));
    expect([...keys(res)].sort()).toEqual([d.patient, d.noted, d.bare].sort());
  });
});
