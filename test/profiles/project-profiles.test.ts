import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { BIRTH_PLACE, MRN, constraintOn, patientProfile, storeProfile, strictPatient, texts } from './helpers.js';

/** StructureDefinitions a project stores: snapshot generated on write, enforced on the writes that claim them. */

const api = await useTestServer();

function issuesAt(body: { issue: { expression?: string[]; details?: { text?: string } }[] }, location: string): string[] {
  return body.issue.filter((found) => found.expression?.[0] === location).map((found) => found.details?.text ?? '');
}

describe('a project profile written with a differential only', () => {
  it('is stored with a snapshot generated from its base', async () => {
    const client = api.newProject();
    const res = await client.post('/StructureDefinition', patientProfile());
    expect(res.status).toBe(201);
    const elements = res.body.snapshot.element as { id: string; min?: number; max?: string; fixedUri?: string; sliceName?: string }[];
    expect(elements[0].id).toBe('Patient');
    expect(elements.find((element) => element.id === 'Patient.name')).toMatchObject({ min: 1, max: '1' });
    expect(elements.find((element) => element.id === 'Patient.identifier:mrn')).toMatchObject({ sliceName: 'mrn', min: 1, max: '1' });
    expect(elements.find((element) => element.id === 'Patient.identifier:mrn.system')).toMatchObject({ min: 1, fixedUri: MRN });
    // Base elements the differential does not name are in the snapshot as the base has them.
    expect(elements.find((element) => element.id === 'Patient.birthDate')).toMatchObject({ min: 0, max: '1' });
    const read = await client.get(`/StructureDefinition/${res.body.id}`);
    expect(read.body.snapshot.element).toHaveLength(elements.length);
  });

  it('refuses a differential naming an element the base does not have, saying which', async () => {
    const profile = patientProfile();
    (profile.differential as { element: unknown[] }).element.push({ id: 'Patient.shoeSize', path: 'Patient.shoeSize', min: 1 });
    const res = await api.newProject().post('/StructureDefinition', profile);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['StructureDefinition.differential.element[9]']);
    expect(res.body.issue[0].details.text).toContain('Unknown element Patient.shoeSize');
  });

  it('refuses a profile whose base definition is not found', async () => {
    const res = await api.newProject().post('/StructureDefinition', { ...patientProfile(), baseDefinition: 'https://example.org/fhir/StructureDefinition/missing' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['StructureDefinition.baseDefinition']);
    expect(res.body.issue[0].details.text).toContain('Base definition https://example.org/fhir/StructureDefinition/missing not found');
  });

  it('may be based on another profile of the project', async () => {
    const client = api.newProject();
    const base = await storeProfile(client);
    const derived = patientProfile();
    derived.baseDefinition = base;
    derived.differential = { element: [{ id: 'Patient', path: 'Patient' }, { id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }] };
    const url = await storeProfile(client, derived);
    const res = await client.post('/Patient', strictPatient(url, { gender: 'male' }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.birthDate')[0]).toContain(`profile ${url}, rule: cardinality 1..1 of Patient.birthDate`);
    expect(issuesAt(res.body, 'Patient.gender')[0]).toContain('fixedCode of Patient.gender');
  });
});

describe('a write claiming a project profile', () => {
  it('is stored when it conforms', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    expect((await client.post('/Patient', strictPatient(url))).status).toBe(201);
  });

  it('is refused when an element is missing (cardinality)', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post('/Patient', strictPatient(url, { name: undefined }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.name')).toEqual([`Patient.name needs at least 1 value, found 0 (profile ${url}, rule: cardinality 1..1 of Patient.name)`]);
  });

  it('is refused when a fixed value differs', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post('/Patient', strictPatient(url, { gender: 'male' }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.gender')).toEqual([`The value "male" must be exactly "female" (profile ${url}, rule: fixedCode of Patient.gender)`]);
  });

  it('is refused when a value does not match a pattern, and stored when it has more than the pattern', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const other = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'S' }] };
    const res = await client.post('/Patient', strictPatient(url, { maritalStatus: other }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.maritalStatus')[0]).toContain('must match the pattern');
    expect(issuesAt(res.body, 'Patient.maritalStatus')[0]).toContain('patternCodeableConcept of Patient.maritalStatus');
    // strictPatient's maritalStatus has a display and a text beyond the pattern.
    expect((await client.post('/Patient', strictPatient(url))).status).toBe(201);
  });

  it('is refused when a value matches no slice of a closed slicing', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post('/Patient', strictPatient(url, { identifier: [{ system: MRN, value: '1' }, { system: 'https://example.org/other', value: '2' }] }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.identifier[1]')[0]).toContain('closed slicing of Patient.identifier');
  });

  it('is refused when a required slice is missing', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post('/Patient', strictPatient(url, { identifier: [{ system: 'https://example.org/other', value: '2' }] }));
    expect(res.status).toBe(400);
    expect(texts(res.body)).toContain(`Patient.identifier:mrn needs at least 1 value, found 0 (profile ${url}, rule: cardinality 1..1 of Patient.identifier:mrn)`);
  });

  it('may carry extensions the open slicing does not name', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const extension = [{ url: 'https://example.org/fhir/StructureDefinition/favourite-colour', valueString: 'green' }];
    expect((await client.post('/Patient', strictPatient(url, { extension }))).status).toBe(201);
  });

  it('has its extensions checked against their definition, found by url', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const good = [{ url: BIRTH_PLACE, valueAddress: { city: 'Utrecht' } }];
    expect((await client.post('/Patient', strictPatient(url, { extension: good }))).status).toBe(201);
    const res = await client.post('/Patient', strictPatient(url, { extension: [{ url: BIRTH_PLACE, valueString: 'Utrecht' }] }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.extension[0].valueString')).toEqual([
      `Type string is not allowed here; the profile allows Address (profile ${BIRTH_PLACE}, rule: types of Extension.value[x])`,
    ]);
  });

  it('has its extensions checked against an extension definition of the project, itself written with a differential only', async () => {
    const client = api.newProject();
    const extensionUrl = `https://example.org/fhir/StructureDefinition/shoe-size-${randomUUID()}`;
    const definition = {
      ...constraintOn('Extension', extensionUrl, [
        { id: 'Extension.extension', path: 'Extension.extension', max: '0' },
        { id: 'Extension.url', path: 'Extension.url', fixedUri: extensionUrl },
        { id: 'Extension.value[x]', path: 'Extension.value[x]', min: 1, type: [{ code: 'integer' }] },
      ]),
      kind: 'complex-type',
      context: [{ type: 'element', expression: 'Patient' }],
    };
    expect((await client.post('/StructureDefinition', definition)).status).toBe(201);
    const url = await storeProfile(client);
    expect((await client.post('/Patient', strictPatient(url, { extension: [{ url: extensionUrl, valueInteger: 42 }] }))).status).toBe(201);
    const res = await client.post('/Patient', strictPatient(url, { extension: [{ url: extensionUrl, valueString: 'large' }] }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.extension[0].valueString')).toEqual([
      `Type string is not allowed here; the profile allows integer (profile ${extensionUrl}, rule: types of Extension.value[x])`,
    ]);
  });

  it('is refused when a slice holds more values than it allows', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const twice = [{ url: BIRTH_PLACE, valueAddress: { city: 'Utrecht' } }, { url: BIRTH_PLACE, valueAddress: { city: 'Delft' } }];
    const res = await client.post('/Patient', strictPatient(url, { extension: twice }));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.extension')[0]).toContain('cardinality 0..1 of Patient.extension:birthPlace');
  });

  it('is checked against the new version once the profile changes', async () => {
    const client = api.newProject();
    const stored = (await client.post('/StructureDefinition', patientProfile())).body;
    const url = stored.url as string;
    expect((await client.post('/Patient', strictPatient(url, { birthDate: undefined }))).status).toBe(201);
    const stricter = { ...stored, snapshot: undefined, differential: { element: [{ id: 'Patient', path: 'Patient' }, { id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }] } };
    expect((await client.put(`/StructureDefinition/${stored.id}`, stricter)).status).toBe(200);
    const res = await client.post('/Patient', strictPatient(url));
    expect(res.status).toBe(400);
    expect(issuesAt(res.body, 'Patient.birthDate')[0]).toContain('cardinality 1..1 of Patient.birthDate');
  });

  it('is refused when a coded value is outside a required binding the profile adds', async () => {
    const client = api.newProject();
    const profile = patientProfile();
    profile.differential = {
      element: [
        { id: 'Patient', path: 'Patient' },
        { id: 'Patient.maritalStatus', path: 'Patient.maritalStatus', binding: { strength: 'required', valueSet: 'http://hl7.org/fhir/ValueSet/marital-status' } },
      ],
    };
    const url = await storeProfile(client, profile);
    const coded = (code: string) => ({ resourceType: 'Patient', meta: { profile: [url] }, maritalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code }] } });
    expect((await client.post('/Patient', coded('S'))).status).toBe(201);
    const res = await client.post('/Patient', coded('Q'));
    expect(res.status).toBe(400);
    expect(res.body.issue).toEqual([
      {
        severity: 'error',
        code: 'code-invalid',
        details: { text: `"Q" is not in the value set http://hl7.org/fhir/ValueSet/marital-status (profile ${url}, rule: required binding of Patient.maritalStatus)` },
        expression: ['Patient.maritalStatus'],
      },
    ]);
  });

  it('has references checked against target profiles it knows, and not against those it does not', async () => {
    const client = api.newProject();
    const practitionerProfile = await storeProfile(client, constraintOn('Practitioner', `https://example.org/fhir/StructureDefinition/gp-${randomUUID()}`, []));
    const reference = (target: string) => [{ id: 'Patient.generalPractitioner', path: 'Patient.generalPractitioner', type: [{ code: 'Reference', targetProfile: [target] }] }];
    const known = await storeProfile(client, constraintOn('Patient', `https://example.org/fhir/StructureDefinition/p-${randomUUID()}`, reference(practitionerProfile)));
    const unknown = await storeProfile(client, constraintOn('Patient', `https://example.org/fhir/StructureDefinition/p-${randomUUID()}`, reference('https://example.org/fhir/StructureDefinition/nobody-knows')));
    const withGp = (url: string, gp: string) => ({ resourceType: 'Patient', meta: { profile: [url] }, generalPractitioner: [{ reference: gp }] });
    expect((await client.post('/Patient', withGp(known, 'Practitioner/p1'))).status).toBe(201);
    const refused = await client.post('/Patient', withGp(known, 'Organization/o1'));
    expect(refused.status).toBe(400);
    expect(issuesAt(refused.body, 'Patient.generalPractitioner[0].reference')).toEqual([
      `A reference to Organization is not allowed here; it must refer to Practitioner (profile ${known}, rule: targetProfile of Patient.generalPractitioner)`,
    ]);
    expect((await client.post('/Patient', withGp(unknown, 'Organization/o1'))).status).toBe(201);
  });

  it('is refused when the profile constrains another resource type', async () => {
    const client = api.newProject();
    const url = await storeProfile(client);
    const res = await client.post('/Observation', { resourceType: 'Observation', meta: { profile: [url] }, status: 'final', code: { text: 'x' } });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toBe(`The profile constrains Patient, not Observation (profile ${url}, rule: type)`);
  });

  it('applies children listed after a slice without ids to that slice', async () => {
    const client = api.newProject();
    const profile = patientProfile();
    const differential = (profile.differential as { element: Record<string, unknown>[] }).element;
    for (const element of differential) delete element.id;
    const stored = await client.post('/StructureDefinition', profile);
    expect(stored.status).toBe(201);
    const elements = stored.body.snapshot.element as { id: string; fixedUri?: string }[];
    expect(elements.find((element) => element.id === 'Patient.identifier:mrn.system')?.fixedUri).toBe(MRN);
    expect(elements.find((element) => element.id === 'Patient.identifier.system')?.fixedUri).toBeUndefined();
    expect((await client.post('/Patient', strictPatient(profile.url as string))).status).toBe(201);
  });

  it('is not checked against a profile of another project', async () => {
    const url = await storeProfile(api.newProject());
    expect((await api.newProject().post('/Patient', strictPatient(url, { name: undefined }))).status).toBe(201);
  });
});
