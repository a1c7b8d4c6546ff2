import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, expectInvalid, found, includeRefs, matchIds } from './helpers.js';

/** A project's own SearchParameter resources: indexed on later writes, searchable in that project only. */

const api = await useTestServer();

type Json = any;

const EYE = 'http://example.org/fhir/StructureDefinition/eye-colour';
const NICKNAME = 'http://example.org/fhir/StructureDefinition/nickname';
const SEEN = 'http://example.org/fhir/StructureDefinition/last-seen';

function searchParameter(code: string, fields: Record<string, unknown>): Json {
  return {
    resourceType: 'SearchParameter',
    url: `http://example.org/fhir/SearchParameter/${code}`,
    name: code,
    status: 'active',
    description: `Test parameter ${code}`,
    code,
    ...fields,
  };
}

const eyeColour = (code = 'eye-colour') =>
  searchParameter(code, { base: ['Patient'], type: 'token', expression: `Patient.extension.where(url = '${EYE}').value` });

const patient = (extension: Json[] = [], extra: Json = {}) => ({
  resourceType: 'Patient',
  ...(extension.length > 0 ? { extension } : {}),
  ...extra,
});
const eye = (colour: string) => ({ url: EYE, valueCode: colour });

async function define(client: ProjectClient, definition: Json): Promise<string> {
  return create(client, definition);
}

describe('custom search parameters', () => {
  it('a token parameter finds resources written after it, with token modifiers', async () => {
    const p = api.newProject();
    await define(p, eyeColour());
    const blue = await create(p, patient([eye('blue')]));
    const brown = await create(p, patient([eye('brown')]));
    expect(await found(p, '/Patient?eye-colour=blue')).toEqual([blue]);
    expect(await found(p, '/Patient?eye-colour=blue,brown')).toEqual([blue, brown].sort());
    expect(await found(p, '/Patient?eye-colour:not=blue')).toEqual([brown]);
    expect(await found(p, '/Patient?eye-colour:missing=true')).toEqual([]);
  });

  it('a string parameter matches by prefix, case-insensitively, and :exact', async () => {
    const p = api.newProject();
    await define(p, searchParameter('nickname', { base: ['Patient'], type: 'string', expression: `Patient.extension('${NICKNAME}').value` }));
    const bob = await create(p, patient([{ url: NICKNAME, valueString: 'Bobby' }]));
    await create(p, patient([{ url: NICKNAME, valueString: 'Rob' }]));
    expect(await found(p, '/Patient?nickname=bob')).toEqual([bob]);
    expect(await found(p, '/Patient?nickname:exact=bob')).toEqual([]);
    expect(await found(p, '/Patient?nickname:exact=Bobby')).toEqual([bob]);
  });

  it('a date parameter takes prefixes, and _sort uses it', async () => {
    const p = api.newProject();
    await define(p, searchParameter('last-seen', { base: ['Patient'], type: 'date', expression: `Patient.extension('${SEEN}').value` }));
    const early = await create(p, patient([{ url: SEEN, valueDateTime: '2020-05-01T10:00:00Z' }]));
    const late = await create(p, patient([{ url: SEEN, valueDateTime: '2023-01-15' }]));
    expect(await found(p, '/Patient?last-seen=gt2021')).toEqual([late]);
    expect(await found(p, '/Patient?last-seen=2020-05')).toEqual([early]);
    expect(matchIds(await p.get('/Patient?_sort=-last-seen'))).toEqual([late, early]);
  });

  it('a reference parameter chains and includes like a built-in one', async () => {
    const p = api.newProject();
    await define(p, searchParameter('gp', { base: ['Patient'], type: 'reference', target: ['Practitioner'], expression: 'Patient.generalPractitioner' }));
    const smith = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Smith' }] });
    const jones = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Jones' }] });
    const a = await create(p, patient([], { generalPractitioner: [{ reference: `Practitioner/${smith}` }] }));
    await create(p, patient([], { generalPractitioner: [{ reference: `Practitioner/${jones}` }] }));
    expect(await found(p, `/Patient?gp=Practitioner/${smith}`)).toEqual([a]);
    expect(await found(p, '/Patient?gp:Practitioner.name=smi')).toEqual([a]);
    expect(includeRefs(await p.get(`/Patient?_id=${a}&_include=Patient:gp`))).toEqual([`Practitioner/${smith}`]);
    expect(await found(p, `/Practitioner?_has:Patient:gp:_id=${a}`)).toEqual([smith]);
  });

  it('a reference parameter with a target left null beside its extension (`_target`) uses its other targets', async () => {
    const p = api.newProject();
    const absent = { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] };
    const definition = searchParameter('gp', {
      base: ['Patient'],
      type: 'reference',
      target: [null, 'Practitioner'],
      _target: [absent, null],
      expression: 'Patient.generalPractitioner',
    });
    const id = await define(p, definition);
    const stored = await p.get(`/SearchParameter/${id}`);
    expect([stored.body.target, stored.body._target]).toEqual([definition.target, definition._target]);
    const smith = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Smith' }] });
    const a = await create(p, patient([], { generalPractitioner: [{ reference: `Practitioner/${smith}` }] }));
    expect(await found(p, `/Patient?gp=Practitioner/${smith}`)).toEqual([a]);
    // The chain without a type modifier takes its candidate types from `target`.
    expect(await found(p, '/Patient?gp.name=smi')).toEqual([a]);
    expect(includeRefs(await p.get(`/Patient?_id=${a}&_include=Patient:gp`))).toEqual([`Practitioner/${smith}`]);
    expect(await found(p, `/Practitioner?_has:Patient:gp:_id=${a}`)).toEqual([smith]);
  });

  it('is not found on resources written before it existed', async () => {
    const p = api.newProject();
    await create(p, patient([eye('green')]));
    await define(p, eyeColour());
    const after = await create(p, patient([eye('green')]));
    expect(await found(p, '/Patient?eye-colour=green')).toEqual([after]);
  });

  it('is an unknown parameter (400) in another project', async () => {
    const owner = api.newProject();
    const other = api.newProject();
    await define(owner, eyeColour());
    await create(other, patient([eye('blue')]));
    expectInvalid(await other.get('/Patient?eye-colour=blue'), 'eye-colour');
  });

  it('is searchable by a super admin narrowing the search to its project with _project', async () => {
    const p = api.newProject();
    await define(p, eyeColour());
    const blue = await create(p, patient([eye('blue')]));
    expect(await found(api.superAdmin, `/Patient?_project=${p.projectId}&eye-colour=blue`)).toEqual([blue]);
  });

  it('is searchable by a chain from another type of the same project', async () => {
    const p = api.newProject();
    await define(p, eyeColour());
    const blue = await create(p, patient([eye('blue')]));
    const obs = await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${blue}` } });
    expect(await found(p, '/Observation?subject:Patient.eye-colour=blue')).toEqual([obs]);
  });

  it('after an update, later writes are indexed by the new expression', async () => {
    const p = api.newProject();
    const id = await define(p, eyeColour());
    const updated = await p.put(`/SearchParameter/${id}`, {
      ...eyeColour(),
      id,
      expression: 'Patient.gender',
    });
    expect(updated.status, updated.text).toBe(200);
    const female = await create(p, patient([eye('blue')], { gender: 'female' }));
    expect(await found(p, '/Patient?eye-colour=female')).toEqual([female]);
    expect(await found(p, '/Patient?eye-colour=blue')).toEqual([]);
  });

  it('once deleted, searching by it is a 400 again', async () => {
    const p = api.newProject();
    const id = await define(p, eyeColour());
    await create(p, patient([eye('blue')]));
    expect((await p.get('/Patient?eye-colour=blue')).status).toBe(200);
    expect((await p.delete(`/SearchParameter/${id}`)).status).toBe(200);
    expectInvalid(await p.get('/Patient?eye-colour=blue'), 'eye-colour');
  });

  it('a SearchParameter restating a built-in one (derivedFrom, same code) is stored and changes nothing', async () => {
    const p = api.newProject();
    const restated = searchParameter('_id', {
      base: ['Resource'],
      type: 'token',
      expression: 'id',
      derivedFrom: 'http://hl7.org/fhir/SearchParameter/Resource-id',
    });
    await define(p, restated);
    const id = await create(p, patient([eye('blue')]));
    expect(await found(p, `/Patient?_id=${id}`)).toEqual([id]);
  });

  it('a retired parameter is not used', async () => {
    const p = api.newProject();
    await define(p, { ...eyeColour(), status: 'retired' });
    expectInvalid(await p.get('/Patient?eye-colour=blue'), 'eye-colour');
  });
});

describe('SearchParameter writes are checked', () => {
  /** A 400 whose issues name `element` and say `mention`; nothing is stored. */
  async function expectRefused(client: ProjectClient, body: Json, element: string, mention: string): Promise<void> {
    const res = await client.post('/SearchParameter', body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    const issue = res.body.issue.find((i: Json) => (i.expression ?? []).includes(element));
    expect(issue, res.text).toBeDefined();
    expect(issue.details.text).toContain(mention);
    const stored = await client.get(`/SearchParameter?url=${encodeURIComponent(String(body.url))}`);
    expect(matchIds(stored)).toEqual([]);
  }

  it('an unknown base type', async () => {
    await expectRefused(api.newProject(), { ...eyeColour(), base: ['Patient', 'Spaceship'] }, 'SearchParameter.base[1]', 'Spaceship');
  });

  it('a base left null beside its extension (`_base`)', async () => {
    const absent = { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] };
    const body = { ...eyeColour(), base: [null, 'Patient'], _base: [absent, null] };
    await expectRefused(api.newProject(), body, 'SearchParameter.base[0]', 'without a value');
  });

  it('an abstract base type', async () => {
    await expectRefused(api.newProject(), { ...eyeColour(), base: ['Resource'] }, 'SearchParameter.base[0]', 'Resource');
  });

  it('a composite type (not supported)', async () => {
    const p = api.newProject();
    const res = await p.post('/SearchParameter', { ...eyeColour(), type: 'composite' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].code).toBe('not-supported');
    expect(res.body.issue[0].expression).toEqual(['SearchParameter.type']);
  });

  it('an expression fhirpath cannot parse', async () => {
    await expectRefused(api.newProject(), { ...eyeColour(), expression: 'Patient.extension.where(' }, 'SearchParameter.expression', 'Patient.extension.where(');
  });

  it('an expression that starts at another type than its base', async () => {
    await expectRefused(api.newProject(), { ...eyeColour(), expression: 'Observation.code' }, 'SearchParameter.expression', 'Patient');
  });

  it('a missing expression', async () => {
    const { expression: _e, ...body } = eyeColour();
    await expectRefused(api.newProject(), body, 'SearchParameter.expression', 'required');
  });

  it('a code that is a built-in parameter of a base type', async () => {
    await expectRefused(api.newProject(), eyeColour('name'), 'SearchParameter.code', 'already a search parameter of Patient');
  });

  it('a code that cannot be a query parameter name', async () => {
    await expectRefused(api.newProject(), eyeColour('eye.colour'), 'SearchParameter.code', 'eye.colour');
  });

  it('a code another SearchParameter of the project defines on the same type', async () => {
    const p = api.newProject();
    const first = await define(p, eyeColour());
    await expectRefused(p, { ...eyeColour(), url: 'http://example.org/other' }, 'SearchParameter.code', `SearchParameter/${first}`);
  });

  it('an invalid update leaves the stored definition in use', async () => {
    const p = api.newProject();
    const id = await define(p, eyeColour());
    const res = await p.put(`/SearchParameter/${id}`, { ...eyeColour(), id, expression: 'Patient.(' });
    expect(res.status, res.text).toBe(400);
    const blue = await create(p, patient([eye('blue')]));
    expect(await found(p, '/Patient?eye-colour=blue')).toEqual([blue]);
  });
});
