import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { create } from '../search-api/helpers.js';
import { keys, ref } from './graph-helpers.js';
import { graphql } from '../graphql/resource-helpers.js';
import { readFileSync } from 'node:fs';
import { R4_EXAMPLES } from '../helpers/fixtures.js';

/** `$graph`: the resources a GraphDefinition of the project reaches from a resource. */

const api = await useTestServer();

type Json = any;

/** A patient with a general practitioner, two Observations (one performed by another Practitioner), and another patient's Observation. */
async function data(p: ProjectClient) {
  const gp = `Practitioner/${await create(p, { resourceType: 'Practitioner', name: [{ family: 'Gp' }] })}`;
  const performer = `Practitioner/${await create(p, { resourceType: 'Practitioner', name: [{ family: 'Lab' }] })}`;
  const patient = `Patient/${await create(p, { resourceType: 'Patient', generalPractitioner: [ref(gp)] })}`;
  const observation = (extra: Json) => ({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: ref(patient), ...extra });
  const observations = [
    `Observation/${await create(p, observation({ performer: [ref(performer)] }))}`,
    `Observation/${await create(p, observation({}))}`,
  ];
  const other = `Patient/${await create(p, { resourceType: 'Patient' })}`;
  await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: ref(other) });
  return { gp, performer, patient, observations };
}

/** Patient → its Observations (reverse) → their performers (nested forward), and Patient → generalPractitioner. */
const patientGraph = {
  resourceType: 'GraphDefinition',
  name: 'patient-chart',
  url: 'https://example.org/GraphDefinition/patient-chart',
  status: 'active',
  start: 'Patient',
  link: [
    { path: 'Patient.generalPractitioner', target: [{ type: 'Practitioner' }] },
    {
      target: [
        {
          type: 'Observation',
          params: 'patient={ref}',
          link: [{ path: 'Observation.performer', target: [{ type: 'Practitioner' }] }],
        },
      ],
    },
  ],
};

describe('$graph', () => {
  it('follows forward links (paths) and reverse links (params), nested, into a collection Bundle with the resource first', async () => {
    const p = api.newProject();
    const d = await data(p);
    await create(p, patientGraph);
    const res = await p.get(`/${d.patient}/$graph?graph=${encodeURIComponent(patientGraph.url)}`);
    expect(res.body.resourceType).toBe('Bundle');
    expect(res.body.type).toBe('collection');
    const found = keys(res);
    expect(found[0]).toBe(d.patient);
    expect([...found].sort()).toEqual([d.patient, d.gp, ...d.observations, d.performer].sort());
  });

  it('follows at most a link’s max resources from each resource, and the other links still', async () => {
    const p = api.newProject();
    const d = await data(p);
    const [forward, reverse] = patientGraph.link;
    const url = `https://example.org/GraphDefinition/one-observation-${Date.now()}`;
    await create(p, { ...patientGraph, url, link: [forward, { ...reverse, max: '1' }] });
    const found = keys(await p.get(`/${d.patient}/$graph?graph=${encodeURIComponent(url)}`));
    expect(found.filter((key) => key.startsWith('Observation/'))).toHaveLength(1);
    expect(found).toContain(d.gp);
  });

  it('answers with what exists and a warning entry when a link finds fewer than its min', async () => {
    const p = api.newProject();
    const d = await data(p);
    const [forward, reverse] = patientGraph.link;
    const url = `https://example.org/GraphDefinition/three-observations-${Date.now()}`;
    await create(p, { ...patientGraph, url, link: [forward, { ...reverse, min: 3 }] });
    const res = await p.get(`/${d.patient}/$graph?graph=${encodeURIComponent(url)}`);
    expect(res.status, res.text).toBe(200);
    const resources = res.body.entry.map((e: Json) => e.resource);
    expect(resources.filter((r: Json) => r.resourceType === 'Observation')).toHaveLength(2);
    const outcome = resources.at(-1);
    expect(outcome.resourceType).toBe('OperationOutcome');
    expect(outcome.issue).toEqual([
      expect.objectContaining({ severity: 'warning', code: 'incomplete', expression: ['GraphDefinition.link[1]'], details: { text: `From ${d.patient}, the link GraphDefinition.link[1] found 2 resources; it asks for at least 3` } }),
    ]);
  });

  it('has no warning entry when every link finds its min', async () => {
    const p = api.newProject();
    const d = await data(p);
    const [forward, reverse] = patientGraph.link;
    const url = `https://example.org/GraphDefinition/two-observations-${Date.now()}`;
    await create(p, { ...patientGraph, url, link: [{ ...forward, min: 1 }, { ...reverse, min: 2 }] });
    const found = keys(await p.get(`/${d.patient}/$graph?graph=${encodeURIComponent(url)}`));
    expect(found.filter((key) => key.startsWith('OperationOutcome/'))).toEqual([]);
    expect(found).toHaveLength(5);
  });

  it('is 400 for a link max that is not a whole number or *', async () => {
    const p = api.newProject();
    const d = await data(p);
    const url = `https://example.org/GraphDefinition/bad-max-${Date.now()}`;
    await create(p, { ...patientGraph, url, link: [{ ...patientGraph.link[0], max: 'many' }] });
    const res = await p.get(`/${d.patient}/$graph?graph=${encodeURIComponent(url)}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['GraphDefinition.link[0].max']);
  });

  it('finds the GraphDefinition by id and by name too', async () => {
    const p = api.newProject();
    const d = await data(p);
    const id = await create(p, patientGraph);
    const byId = keys(await p.get(`/${d.patient}/$graph?graph=${id}`));
    const byName = keys(await p.get(`/${d.patient}/$graph?graph=patient-chart`));
    expect(byId).toHaveLength(5);
    expect(byName).toEqual(byId);
  });

  it("follows the HL7 example GraphDefinition: a Composition's section Lists, then any resource they hold", async () => {
    const p = api.newProject();
    const d = await data(p);
    // The example's compartment rules (requirement, Patient, identical) want the List and its items about the Composition's patient.
    const list = `List/${await create(p, { resourceType: 'List', status: 'current', mode: 'working', subject: ref(d.patient), entry: d.observations.map((o) => ({ item: ref(o) })) })}`;
    const composition = `Composition/${await create(p, {
      resourceType: 'Composition',
      subject: ref(d.patient),
      status: 'final',
      type: { text: 'summary' },
      date: '2024-01-01',
      author: [ref(d.gp)],
      title: 'Summary',
      section: [{ title: 'Results', entry: [ref(list), ref(d.gp)] }],
    })}`;
    const example = JSON.parse(readFileSync(new URL('graphdefinition-example.json', R4_EXAMPLES), 'utf8'));
    const { id: _id, ...definition } = example;
    await create(p, definition);
    const res = await p.get(`/${composition}/$graph?graph=${encodeURIComponent(example.url)}`);
    // The section's Practitioner is not a List: only the List and its Observations are followed.
    expect(keys(res)).toEqual([composition, list, ...d.observations]);
  });

  it('follows canonicals of a path to the resources with that url', async () => {
    const p = api.newProject();
    const url = 'https://example.org/Library/dosing';
    const library = `Library/${await create(p, { resourceType: 'Library', url, status: 'active', type: { text: 'logic' } })}`;
    const plan = `PlanDefinition/${await create(p, { resourceType: 'PlanDefinition', status: 'active', library: [`${url}|1.0`] })}`;
    await create(p, { ...patientGraph, start: 'PlanDefinition', link: [{ path: 'PlanDefinition.library', target: [{ type: 'Library' }] }] });
    expect(keys(await p.get(`/${plan}/$graph?graph=patient-chart`))).toEqual([plan, library]);
  });

  it('lists a resource reached twice once', async () => {
    const p = api.newProject();
    const d = await data(p);
    // Both links reach the patient's GP (with and without the type in the path).
    await create(p, {
      ...patientGraph,
      link: [
        { path: 'Patient.generalPractitioner', target: [{ type: 'Practitioner' }] },
        { path: 'generalPractitioner', target: [{ type: 'Practitioner' }] },
      ],
    });
    expect(keys(await p.get(`/${d.patient}/$graph?graph=patient-chart`))).toEqual([d.patient, d.gp]);
  });

  it('leaves out what the AccessPolicy does not let the caller read', async () => {
    const p = api.newProject();
    const d = await data(p);
    await create(p, patientGraph);
    const policy = await create(p, { resourceType: 'AccessPolicy', name: 'no practitioners', resource: [{ resourceType: 'Patient' }, { resourceType: 'Observation' }, { resourceType: 'GraphDefinition' }] });
    const member = await addMemberClient(api, p, { accessPolicy: `AccessPolicy/${policy}` });
    const res = await projectClient(api.fhir, p.projectId, async () => member.token).get(`/${d.patient}/$graph?graph=patient-chart`);
    expect([...keys(res)].sort()).toEqual([d.patient, ...d.observations].sort());
  });

  it('is the GraphQL field <Type>Graph', async () => {
    const p = api.newProject();
    const d = await data(p);
    await create(p, patientGraph);
    const res = await graphql(api, p, `{ PatientGraph(id: "${d.patient.split('/')[1]}", graph: "patient-chart") { type entry { resource { resourceType id } } } }`);
    expect(res.status).toBe(200);
    const bundle = (res.body.data as Json).PatientGraph;
    expect(bundle.type).toBe('collection');
    expect(bundle.entry.map((e: Json) => `${e.resource.resourceType}/${e.resource.id}`).sort()).toEqual([d.patient, d.gp, ...d.observations, d.performer].sort());
  });

  it('is 404 naming the graph when the project has no such GraphDefinition', async () => {
    const p = api.newProject();
    const d = await data(p);
    const res = await p.get(`/${d.patient}/$graph?graph=nowhere`);
    expect(res.status).toBe(404);
    expect(JSON.stringify(res.body.issue)).toContain('nowhere');
  });

  it('is 400 when the graph starts at another type', async () => {
    const p = api.newProject();
    const d = await data(p);
    await create(p, patientGraph);
    const res = await p.get(`/${d.observations[0]}/$graph?graph=patient-chart`);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.issue)).toContain('starts at Patient');
  });

  it('is 400 for a reverse link whose params do not name {ref}', async () => {
    const p = api.newProject();
    const d = await data(p);
    await create(p, { ...patientGraph, link: [{ target: [{ type: 'Observation', params: 'status=final' }] }] });
    const res = await p.get(`/${d.patient}/$graph?graph=patient-chart`);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.issue)).toContain('{ref}');
  });

  it('is 400 without the graph parameter', async () => {
    const p = api.newProject();
    const d = await data(p);
    expect((await p.get(`/${d.patient}/$graph`)).status).toBe(400);
  });
});
