import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { ASYNC, create, exportDone, exportedLines, idsOf, manifestOf, type Json } from './export-helpers.js';

/**
 * The optional parameters of a bulk data export (Bulk Data Access IG 2.0): `_elements`, `patient`
 * and `includeAssociatedData`.
 */

const api = await useTestServer();

const SUBSETTED = 'SUBSETTED';
const subsetted = (resource: Json): boolean => (resource.meta?.tag ?? []).some((tag: Json) => tag.code === SUBSETTED);

function parameters(...parameter: Json[]): Json {
  return { resourceType: 'Parameters', parameter };
}

describe('_elements', () => {
  it('keeps the listed and mandatory elements of a type it names, and marks the resource SUBSETTED', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', gender: 'female', birthDate: '1990-01-01', name: [{ family: 'Elements' }] });
    const { manifest } = await exportDone(p, '?_elements=Patient.gender');
    const [line] = await exportedLines(p, manifest);
    expect(line.resource.id).toBe(patient.id);
    expect(line.resource.gender).toBe('female');
    expect(line.resource.name).toBeUndefined();
    expect(line.resource.birthDate).toBeUndefined();
    expect(subsetted(line.resource)).toBe(true);
  });

  it('keeps a mandatory element it does not list', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'kept' }, valueString: 'dropped' });
    const { manifest } = await exportDone(p, '?_elements=Observation.subject');
    const [line] = await exportedLines(p, manifest);
    expect(line.resource.status).toBe('final');
    expect(line.resource.code).toEqual({ text: 'kept' });
    expect(line.resource.valueString).toBeUndefined();
  });

  it('applies an element without a type to every type, and leaves types no element names whole', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', gender: 'male', name: [{ family: 'Whole' }] });
    await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueString: 'dropped' });
    const { manifest: everyType } = await exportDone(p, '?_elements=gender');
    const byType = Object.fromEntries((await exportedLines(p, everyType)).map(({ type, resource }) => [type, resource]));
    expect(byType.Patient.gender).toBe('male');
    expect(byType.Patient.name).toBeUndefined();
    expect(byType.Observation.valueString).toBeUndefined();

    const { manifest: oneType } = await exportDone(p, '?_elements=Patient.gender');
    const untouched = (await exportedLines(p, oneType)).find(({ type }) => type === 'Observation')!.resource;
    expect(untouched.valueString).toBe('dropped');
    expect(subsetted(untouched)).toBe(false);
  });

  it('answers 400 for an element below the root', async () => {
    const res = await api.newProject().get('/$export?_elements=Patient.name.family', ASYNC);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['_elements']);
  });
});

describe('patient', () => {
  /** Three patients with an Observation each, in a new project. */
  async function threeRecords(): Promise<{ p: ProjectClient; patients: string[]; observations: string[] }> {
    const p = api.newProject();
    const patients: string[] = [];
    const observations: string[] = [];
    for (let i = 0; i < 3; i++) {
      const patient = await create(p, { resourceType: 'Patient', name: [{ family: `Narrowed${i}` }] });
      patients.push(patient.id);
      observations.push((await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${patient.id}` } })).id);
    }
    return { p, patients, observations };
  }

  const patientParameter = (id: string): Json => ({ name: 'patient', valueReference: { reference: `Patient/${id}` } });

  it('narrows Patient/$export to the patients it names and their compartments', async () => {
    const { p, patients, observations } = await threeRecords();
    const body = parameters(patientParameter(patients[0]), patientParameter(patients[2]));
    const manifest = await manifestOf(p, await p.post('/Patient/$export', body, ASYNC));
    const expected = [patients[0], patients[2]].map((id) => `Patient/${id}`).concat([observations[0], observations[2]].map((id) => `Observation/${id}`));
    expect(idsOf(await exportedLines(p, manifest))).toEqual(expected.sort());
  });

  it('narrows Group/{id}/$export to the members it names, leaving out patients who are not members', async () => {
    const { p, patients, observations } = await threeRecords();
    const member = (id: string): Json => ({ entity: { reference: `Patient/${id}` } });
    const group = await create(p, { resourceType: 'Group', type: 'person', actual: true, member: [member(patients[0]), member(patients[1])] });
    const body = parameters(patientParameter(patients[1]), patientParameter(patients[2]));
    const manifest = await manifestOf(p, await p.post(`/Group/${group.id}/$export`, body, ASYNC));
    expect(idsOf(await exportedLines(p, manifest))).toEqual([`Group/${group.id}`, `Observation/${observations[1]}`, `Patient/${patients[1]}`].sort());
  });

  it('answers 400 for a reference that is not to a Patient', async () => {
    const p = api.newProject();
    const res = await p.post('/Patient/$export', parameters({ name: 'patient', valueReference: { reference: 'Observation/1' } }), ASYNC);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Observation/1');
  });
});

describe('includeAssociatedData', () => {
  it('is accepted and changes nothing', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Associated' }] });
    const { manifest } = await exportDone(p, '?includeAssociatedData=LatestProvenanceResources,_custom');
    expect(idsOf(await exportedLines(p, manifest))).toEqual([`Patient/${patient.id}`]);
  });
});
