import { describe, expect, it } from 'vitest';
import { getStructureDefinitions } from '../../src/fhir/definitions.js';
import { buildModel } from '../../src/graphql/generator/model.js';
import { getTypeModel, type TypeModel } from '../../src/validation/model.js';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, data, ENDPOINTS, everyWay, graphql, onlyError } from './resource-helpers.js';

// Primitive extensions (FHIR GraphQL): a primitive element's id and extensions, which FHIR JSON keeps
// in its `_` sibling (`_birthDate`, `_given`), are fields of the same name of type Element; a
// repeating element's list lines up by index with the values, null where a value has none.

const api = await useTestServer();

const BIRTH_TIME = 'http://hl7.org/fhir/StructureDefinition/patient-birthTime';
const NICKNAME = 'http://example.org/nickname';

/** A Patient with extensions on `birthDate`, on the second `given` only, and on `gender` and `active`. */
const withPrimitiveExtensions = () =>
  patientBody({
    active: true,
    _active: { id: 'a1' },
    gender: 'male',
    _gender: { extension: [{ url: 'http://example.org/gender-note', valueString: 'self-reported' }] },
    birthDate: '2016-05-18',
    _birthDate: { id: 'bd', extension: [{ url: BIRTH_TIME, valueDateTime: '2016-05-18T10:28:45Z' }] },
    name: [
      {
        family: 'Chalmers',
        given: ['Peter', 'James', 'Jim'],
        _given: [null, { extension: [{ url: NICKNAME, valueBoolean: false }] }, { id: 'g3', extension: [{ url: NICKNAME, valueBoolean: true }] }],
      },
    ],
  });

const READ = `query ($id: ID!) {
  Patient(id: $id) {
    birthDate
    _birthDate { id extension { url valueDateTime } }
    gender _gender { extension { valueString } }
    active _active { id }
    name { given _given { id extension { url valueBoolean } } }
    _language { id }
  }
}`;

describe('primitive extensions: schema', () => {
  /** A type's fields as `name: Type(args)` from introspection. */
  async function fieldsOf(typeName: string, kind: 'fields' | 'inputFields' = 'fields'): Promise<Map<string, string>> {
    const client = api.newProject();
    const typeRef = 'type { kind name ofType { kind name ofType { kind name } } }';
    const body = await data(api, client, `{ __type(name: "${typeName}") { ${kind} { name ${kind === 'fields' ? 'args { name }' : ''} ${typeRef} } } }`);
    const show = (type: any): string => (type.kind === 'LIST' ? `[${show(type.ofType)}]` : type.kind === 'NON_NULL' ? `${show(type.ofType)}!` : type.name);
    return new Map(
      body.__type[kind].map((field: any) => [field.name, `${show(field.type)}${field.args?.length ? `(${field.args.map((arg: any) => arg.name).join(',')})` : ''}`]),
    );
  }

  it('gives every primitive a `_x` field of type Element, a list without arguments for a repeating one', async () => {
    const patient = await fieldsOf('Patient');
    expect(patient.get('_birthDate')).toBe('Element');
    expect(patient.get('_gender')).toBe('Element');
    expect(patient.get('_deceasedBoolean')).toBe('Element');
    expect(patient.get('_id')).toBe('Element');
    // Complex elements have no `_` sibling.
    expect(patient.has('_name')).toBe(false);
    const name = await fieldsOf('HumanName');
    expect(name.get('given')).toBe('[String](fhirpath,_count,_offset)');
    expect(name.get('_given')).toBe('[Element]');
    // An element's own id is an attribute in XML: no `_id` on data types and backbone elements.
    expect(name.has('_id')).toBe(false);
    expect((await fieldsOf('Extension')).has('_url')).toBe(false);
    expect((await fieldsOf('Narrative')).has('_div')).toBe(false);
    expect(Object.fromEntries(await fieldsOf('Element'))).toEqual({ id: 'String', extension: '[Extension](url,fhirpath,_count,_offset)' });
    expect((await fieldsOf('Resource')).get('_language')).toBe('Element');
  });

  it('accepts `_x` in the input types', async () => {
    expect((await fieldsOf('PatientInput', 'inputFields')).get('_birthDate')).toBe('ElementInput');
    expect((await fieldsOf('HumanNameInput', 'inputFields')).get('_given')).toBe('[ElementInput]');
    expect(Object.fromEntries(await fieldsOf('ElementInput', 'inputFields'))).toEqual({ id: 'String', extension: '[ExtensionInput]' });
  });

  it('has exactly the `_x` siblings the validator accepts in FHIR JSON, but those of element ids and Extension.url', () => {
    // The validator's compiled models, backbone elements included, by element path.
    const models = new Map<string, TypeModel>();
    const visit = (model: TypeModel | undefined) => {
      if (!model || models.has(model.name)) return;
      models.set(model.name, model);
      for (const slot of model.slots.values()) if (slot.type.model && !slot.type.primitive) visit(slot.type.model);
    };
    // Elements typed as FHIRPath system types: an element's `id`, `Extension.url` (and a resource's id, which is a primitive).
    const attributes = new Set<string>();
    for (const definition of getStructureDefinitions().values()) {
      for (const element of definition.snapshot?.element ?? []) {
        if (element.type?.some((type) => type.code.startsWith('http://hl7.org/fhirpath/System.'))) attributes.add(element.path);
      }
    }
    const objects = buildModel().objects;
    for (const object of objects) if (object.kind !== 'backbone') visit(getTypeModel(object.path));
    let compared = 0;
    for (const object of objects) {
      const model = models.get(object.path);
      expect(model, object.path).toBeDefined();
      if (!model) continue;
      const accepted = [...model.slots].filter(
        ([key, slot]) => slot.isPrimitiveExtension && (!attributes.has(slot.element.path) || (model.isResource && key === '_id')),
      );
      const generated = object.fields.filter((field) => field.primitiveExtension);
      expect(generated.map((field) => field.name).sort(), object.path).toEqual(accepted.map(([key]) => key).sort());
      for (const field of generated) expect(field.list, `${object.path}.${field.name}`).toBe(model.slots.get(field.name)!.element.isArray);
      compared++;
    }
    expect(compared).toBe(objects.length);
  });
});

describe('primitive extensions: reading `_x` fields', () => {
  for (const endpoint of ENDPOINTS) {
    it(`reads _birthDate, _gender, _active and a repeating _given with its nulls (${endpoint})`, async () => {
      const client = api.newProject();
      const patient = await create(client, withPrimitiveExtensions());
      const res = await graphql(api, client, READ, { id: patient.id }, endpoint);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.Patient).toEqual({
        birthDate: '2016-05-18',
        _birthDate: { id: 'bd', extension: [{ url: BIRTH_TIME, valueDateTime: '2016-05-18T10:28:45Z' }] },
        gender: 'male',
        _gender: { extension: [{ valueString: 'self-reported' }] },
        active: true,
        _active: { id: 'a1' },
        name: [
          {
            given: ['Peter', 'James', 'Jim'],
            _given: [null, { id: null, extension: [{ url: NICKNAME, valueBoolean: false }] }, { id: 'g3', extension: [{ url: NICKNAME, valueBoolean: true }] }],
          },
        ],
        _language: null,
      });
    });
  }

  it('gives the same `_x` values as the stored FHIR JSON (REST read)', async () => {
    const client = api.newProject();
    const patient = await create(client, withPrimitiveExtensions());
    const rest = (await client.get(`/Patient/${patient.id}`)).body;
    const body = await data(api, client, `query ($id: ID!) { Patient(id: $id) { _birthDate { id extension { url valueDateTime } } name { _given { id extension { url valueBoolean } } } } }`, {
      id: patient.id,
    });
    expect(body.Patient._birthDate).toEqual(rest._birthDate);
    // GraphQL answers every selected field: `id: null` where the stored object has none.
    expect(body.Patient.name[0]._given).toEqual(rest.name[0]._given.map((item: any) => (item === null ? null : { id: null, ...item })));
  });

  it('filters `extension` inside `_x` by url, and answers null for a primitive without extensions', async () => {
    const client = api.newProject();
    const patient = await create(client, withPrimitiveExtensions());
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Patient(id: $id) {
        _birthDate { extension(url: "http://example.org/other") { url } }
        telecom { value _value { id } }
        name { family _family { id } }
      } }`,
      { id: patient.id },
    );
    expect(body.Patient).toEqual({ _birthDate: { extension: [] }, telecom: [{ value: '(03) 5555 6473', _value: null }], name: [{ family: 'Chalmers', _family: null }] });
  });

  it('reads `_x` through a contained resource and on choice elements (`_valueString`)', async () => {
    const client = api.newProject();
    const observation = await create(client, {
      resourceType: 'Observation',
      status: 'final',
      _status: { extension: [{ url: 'http://example.org/status-source', valueCode: 'device' }] },
      code: { text: 'note' },
      valueString: 'fine',
      _valueString: { id: 'v1' },
      subject: { reference: '#p' },
      contained: [{ resourceType: 'Patient', id: 'p', birthDate: '2016-05-18', _birthDate: { extension: [{ url: BIRTH_TIME, valueDateTime: '2016-05-18T10:28:45Z' }] } }],
    });
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Observation(id: $id) {
        status _status { extension { valueCode } }
        valueString _valueString { id }
        subject { resource { ... on Patient { birthDate _birthDate { extension { valueDateTime } } } } }
      } }`,
      { id: observation.id },
    );
    expect(body.Observation).toEqual({
      status: 'final',
      _status: { extension: [{ valueCode: 'device' }] },
      valueString: 'fine',
      _valueString: { id: 'v1' },
      subject: { resource: { birthDate: '2016-05-18', _birthDate: { extension: [{ valueDateTime: '2016-05-18T10:28:45Z' }] } } },
    });
  });

  it('reads `_x` at the instance-level $graphql', async () => {
    const client = api.newProject();
    const patient = await create(client, withPrimitiveExtensions());
    const res = await api.raw(`/fhir/R4/Patient/${patient.id}/$graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...(await client.authHeaders()) },
      body: JSON.stringify({ query: '{ birthDate _birthDate { extension { valueDateTime } } }' }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()) as unknown).toEqual({
      data: { birthDate: '2016-05-18', _birthDate: { extension: [{ valueDateTime: '2016-05-18T10:28:45Z' }] } },
    });
  });
});

describe('primitive extensions: compiled queries', () => {
  // Standard, compiled and prepared answers must be the same, byte for byte (resource-helpers.ts, everyWay).
  const twice = (client: ProjectClient, query: string, variables?: Record<string, unknown>, path = '/fhir/R4/$graphql') =>
    everyWay(api, client, query, variables, path);

  it('answers `_x` fields, nulls of `_given` included, as the standard executor does', async () => {
    const client = api.newProject();
    const patient = await create(client, withPrimitiveExtensions());
    const body = await twice(client, READ, { id: patient.id });
    expect(body.errors).toBeUndefined();
    expect(body.data.Patient.name[0]._given[0]).toBeNull();
    expect(body.data.Patient._birthDate.id).toBe('bd');

    const list = await twice(
      client,
      `{ PatientList(_id: "${patient.id}") { id b: _birthDate { extension(url: "${BIRTH_TIME}") { valueDateTime } } name { _given { ... on Element { id } } } } }`,
    );
    expect(list.data.PatientList).toEqual([
      { id: patient.id, b: { extension: [{ valueDateTime: '2016-05-18T10:28:45Z' }] }, name: [{ _given: [null, { id: null }, { id: 'g3' }] }] },
    ]);
  });

  it('answers `_x` fields at the instance level as the standard executor does', async () => {
    const client = api.newProject();
    const patient = await create(client, withPrimitiveExtensions());
    const body = await twice(client, '{ _birthDate { id } name { given _given { id } } }', undefined, `/fhir/R4/Patient/${patient.id}/$graphql`);
    expect(body.data).toEqual({ _birthDate: { id: 'bd' }, name: [{ given: ['Peter', 'James', 'Jim'], _given: [null, { id: null }, { id: 'g3' }] }] });
  });
});

describe('primitive extensions: writing `_x` fields with mutations', () => {
  const CREATE = `mutation ($res: PatientInput!) { PatientCreate(res: $res) { id birthDate _birthDate { extension { url valueDateTime } } } }`;

  async function restRead(client: ProjectClient, id: string): Promise<any> {
    const res = await client.get(`/Patient/${id}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  it('creates a Patient with _birthDate, and the REST read returns it as FHIR JSON', async () => {
    const client = api.newProject();
    const _birthDate = { id: 'bd', extension: [{ url: BIRTH_TIME, valueDateTime: '2016-05-18T10:28:45Z' }] };
    const body = await data(api, client, CREATE, { res: { birthDate: '2016-05-18', _birthDate } });
    expect(body.PatientCreate._birthDate).toEqual({ extension: _birthDate.extension });
    const rest = await restRead(client, body.PatientCreate.id);
    expect(rest.birthDate).toBe('2016-05-18');
    expect(rest._birthDate).toEqual(_birthDate);
  });

  it('takes `_x` as literals in the query too, and a `_x` without its value', async () => {
    const client = api.newProject();
    const body = await data(
      api,
      client,
      `mutation { PatientCreate(res: { _birthDate: { extension: [{ url: "http://example.org/unknown", valueCode: "asked-declined" }] } }) { id birthDate _birthDate { extension { valueCode } } } }`,
    );
    expect(body.PatientCreate).toMatchObject({ birthDate: null, _birthDate: { extension: [{ valueCode: 'asked-declined' }] } });
    const rest = await restRead(client, body.PatientCreate.id);
    expect(rest).not.toHaveProperty('birthDate');
    expect(rest._birthDate).toEqual({ extension: [{ url: 'http://example.org/unknown', valueCode: 'asked-declined' }] });
  });

  it('keeps the nulls that line up a repeating primitive with its `_` list (given / _given)', async () => {
    const client = api.newProject();
    const name = {
      family: 'Chalmers',
      given: ['Peter', null, 'Jim'],
      _given: [null, { extension: [{ url: NICKNAME, valueBoolean: true }] }, { id: 'g3' }],
    };
    const body = await data(api, client, `mutation ($res: PatientInput!) { PatientCreate(res: $res) { id name { given _given { id } } } }`, {
      res: { name: [name] },
    });
    expect(body.PatientCreate.name).toEqual([{ given: ['Peter', null, 'Jim'], _given: [null, { id: null }, { id: 'g3' }] }]);
    const rest = await restRead(client, body.PatientCreate.id);
    expect(rest.name).toEqual([name]);
  });

  it('still drops nulls in a list that has no `_` sibling in the input', async () => {
    const client = api.newProject();
    const body = await data(api, client, `mutation ($res: PatientInput!) { PatientCreate(res: $res) { id } }`, {
      res: { name: [{ given: ['Peter', null] }] },
    });
    expect((await restRead(client, body.PatientCreate.id)).name).toEqual([{ given: ['Peter'] }]);
  });

  it('updates `_birthDate`: the new version has it, REST and GraphQL agree', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    const body = await data(
      api,
      client,
      `mutation ($id: ID!, $res: PatientInput!) { PatientUpdate(id: $id, res: $res) { id meta { versionId } _birthDate { extension { valueDateTime } } } }`,
      { id: patient.id, res: { birthDate: '1974-12-25', _birthDate: { extension: [{ url: BIRTH_TIME, valueDateTime: '1974-12-25T14:35:45-05:00' }] } } },
    );
    expect(body.PatientUpdate._birthDate).toEqual({ extension: [{ valueDateTime: '1974-12-25T14:35:45-05:00' }] });
    expect(body.PatientUpdate.meta.versionId).not.toBe(patient.meta.versionId);
    const rest = await restRead(client, patient.id);
    expect(rest._birthDate).toEqual({ extension: [{ url: BIRTH_TIME, valueDateTime: '1974-12-25T14:35:45-05:00' }] });
  });

  it('refuses misaligned lists with the validator OperationOutcome, as REST does', async () => {
    const client = api.newProject();
    const name = { given: ['Peter', 'James'], _given: [{ id: 'g1' }] };
    const rest = await client.post('/Patient', { resourceType: 'Patient', name: [name] });
    expect(rest.status).toBe(400);
    const res = await graphql(api, client, CREATE, { res: { name: [name] } });
    expect(res.body.data).toEqual({ PatientCreate: null });
    expect(onlyError(res).outcome).toEqual(rest.body);
  });
});
