import { getElementDefinition, getSearchParameter, isDataTypeLoaded, MedplumClient } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import { useMedplumSessionStorage } from '../helpers/medplum-session.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * GraphQL as Medplum's own client (`@medplum/core` MedplumClient) and apps send it: the schema
 * loading of its React components (`requestSchema`), and queries written for Medplum's schema
 * (search arguments as `String`, variables declared so).
 */

const api = await useTestServer();

useMedplumSessionStorage();

async function signedIn(): Promise<{ medplum: MedplumClient; project: ProjectClient }> {
  const project = api.newProject();
  const { clientId, clientSecret } = await api.credentialsOf(project);
  const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
  await medplum.startClientLogin(clientId, clientSecret);
  return { medplum, project };
}

type Patient = { id: string; name?: { family?: string; given?: string[] }[] };

async function patient(project: ProjectClient, family: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await project.post('/Patient', { resourceType: 'Patient', name: [{ family }], ...extra });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

describe('MedplumClient GraphQL', () => {
  it("requestSchema('Patient') loads the Patient definition and its search parameters", async () => {
    const { medplum } = await signedIn();
    expect(isDataTypeLoaded('Patient')).toBe(false);
    await medplum.requestSchema('Patient');
    expect(isDataTypeLoaded('Patient')).toBe(true);
    expect(getElementDefinition('Patient', 'birthDate')?.type.map((type) => type.code)).toEqual(['date']);
    expect(getElementDefinition('Patient', 'name')?.max).toBe(Number.POSITIVE_INFINITY);
    expect(getSearchParameter('Patient', 'birthdate')).toMatchObject({
      code: 'birthdate',
      type: 'date',
      expression: expect.stringContaining('Patient.birthDate'),
    });
    expect(getSearchParameter('Patient', 'general-practitioner')?.target).toContain('Practitioner');
  });

  it('a list with name, _count, _sort and _offset as inline strings and numbers', async () => {
    const { medplum, project } = await signedIn();
    const family = `F${Date.now()}`;
    const ids = [await patient(project, `${family}a`), await patient(project, `${family}b`), await patient(project, `${family}c`)];
    const query = `{ PatientList(name: "${family}", _count: 2, _offset: 1, _sort: "family") { id name { family } } }`;
    const result = await medplum.graphql(query);
    expect(result.errors).toBeUndefined();
    expect((result.data.PatientList as Patient[]).map((p) => p.id)).toEqual(ids.slice(1));
  });

  it('search arguments given by variables declared String, as for Medplum\'s schema', async () => {
    const { medplum, project } = await signedIn();
    const id = await patient(project, 'Variable', { identifier: [{ system: 'http://example.org/mrn', value: 'v-1' }] });
    await patient(project, 'Variable');
    const query = 'query Find($identifier: String, $name: String!, $count: Int) { PatientList(identifier: $identifier, name: $name, _count: $count) { id } }';
    // Several times: the query is compiled after its first runs, and must answer the same.
    for (let i = 0; i < 4; i++) {
      const result = await medplum.graphql(query, 'Find', { identifier: 'http://example.org/mrn|v-1', name: 'Variable', count: 10 });
      expect(result.errors).toBeUndefined();
      expect((result.data.PatientList as Patient[]).map((p) => p.id)).toEqual([id]);
    }
  });

  it('a token argument and an enum-coded one (gender, status) as strings', async () => {
    const { medplum, project } = await signedIn();
    const subject = await patient(project, 'Tokens', { gender: 'female' });
    await patient(project, 'Tokens', { gender: 'male' });
    const obs = await project.post('/Observation', {
      resourceType: 'Observation',
      status: 'entered-in-error',
      code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
      subject: { reference: `Patient/${subject}` },
    });
    expect(obs.status, obs.text).toBe(201);
    const result = await medplum.graphql(
      `{ PatientList(name: "Tokens", gender: "female") { id }
         ObservationList(code: "http://loinc.org|8867-4", status: "entered-in-error") { id } }`,
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.PatientList.map((p: Patient) => p.id)).toEqual([subject]);
    expect(result.data.ObservationList.map((o: { id: string }) => o.id)).toEqual([obs.body.id]);
  });

  it('a create with a code as a String variable, as Medplum\'s schema takes it', async () => {
    const { medplum, project } = await signedIn();
    const result = await medplum.graphql(
      'mutation Create($gender: String, $family: String) { PatientCreate(res: { resourceType: "Patient", gender: $gender, name: [{ family: $family }] }) { id gender } }',
      'Create',
      { gender: 'male', family: 'Coded' },
    );
    expect(result.errors).toBeUndefined();
    expect(result.data.PatientCreate.gender).toBe('male');
    expect((await project.get(`/Patient/${result.data.PatientCreate.id}`)).body.gender).toBe('male');
  });

  it('a coded field reads back as its FHIR code (entered-in-error)', async () => {
    const { medplum, project } = await signedIn();
    const subject = await patient(project, 'Read');
    const obs = await project.post('/Observation', {
      resourceType: 'Observation',
      status: 'entered-in-error',
      code: { text: 'x' },
      subject: { reference: `Patient/${subject}` },
    });
    expect(obs.status, obs.text).toBe(201);
    const result = await medplum.graphql(`{ Observation(id: "${obs.body.id}") { status } }`);
    expect(result.errors).toBeUndefined();
    expect(result.data.Observation.status).toBe('entered-in-error');
  });

  it('StructureDefinitionList with _filter on built-in definitions: and, a token parameter', async () => {
    const { medplum } = await signedIn();
    const result = await medplum.graphql('{ StructureDefinitionList(_filter: "name eq Observation and kind eq resource") { url kind } }');
    expect(result.errors).toBeUndefined();
    expect(result.data.StructureDefinitionList).toEqual([{ url: 'http://hl7.org/fhir/StructureDefinition/Observation', kind: 'resource' }]);
  });

  it('a bad _filter is an error naming where, with its OperationOutcome', async () => {
    const { medplum } = await signedIn();
    const result = await medplum.graphql('{ PatientList(_filter: "name eq") { id } }');
    expect(result.errors[0].message).toContain('_filter at character 8');
    expect(result.errors[0].extensions.resource.issue[0].expression).toEqual(['_filter']);
  });

  it('a variable of a scalar type where an input object list is expected is still refused', async () => {
    const { medplum } = await signedIn();
    const result = await medplum.graphql('query($p: String) { PatientList(_params: $p) { id } }', undefined, { p: 'x' });
    expect(result.errors[0].message).toContain('Variable "$p" of type "String" used in position expecting type "[SearchParam!]"');
  });
});
