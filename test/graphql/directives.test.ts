import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, data, graphql, onlyError, observation } from './resource-helpers.js';

const api = await useTestServer();

/** The names of the FHIR example Patient: official, usual (no family), maiden. */
const NAMES = [
  { use: 'official', family: 'Chalmers', given: ['Peter', 'James'] },
  { use: 'usual', given: ['Jim'] },
  { use: 'maiden', family: 'Windsor', given: ['Peter', 'James'] },
];

async function examplePatient(client: ProjectClient): Promise<string> {
  const patient = await create(
    client,
    patientBody({ active: true, identifier: [{ system: 'urn:oid:1.2.36', value: '12345' }], name: NAMES }),
  );
  return patient.id as string;
}

/** Runs `selection` on one Patient read by id and returns what the query gives for it. */
async function onPatient(selection: string): Promise<any> {
  const client = api.newProject();
  const id = await examplePatient(client);
  const body = await data(api, client, `{ Patient(id: "${id}") { ${selection} } }`);
  return body.Patient;
}

describe('@flatten', () => {
  it("writes a list's fields into the parent, each a list of the values of every item", async () => {
    expect(await onPatient('identifier @flatten { system value } active name @flatten { text given family }')).toEqual({
      system: ['urn:oid:1.2.36'],
      value: ['12345'],
      active: true,
      given: ['Peter', 'James', 'Jim', 'Peter', 'James'],
      family: ['Chalmers', 'Windsor'],
    });
  });

  it('flattens a single object into single values', async () => {
    const client = api.newProject();
    const patientId = await examplePatient(client);
    const obs = await create(client, observation(`Patient/${patientId}`));
    const body = await data(api, client, `{ Observation(id: "${obs.id}") { id subject @flatten { reference } } }`);
    expect(body.Observation).toEqual({ id: obs.id, reference: `Patient/${patientId}` });
  });

  it('flattens the results of a search', async () => {
    const client = api.newProject();
    const id = await examplePatient(client);
    const body = await data(api, client, `{ PatientList(_id: "${id}") @flatten { id name @flatten @first { family } } }`);
    expect(body).toEqual({ id: [id], family: ['Chalmers'] });
  });

  it('applies inside fragments', async () => {
    const client = api.newProject();
    const patientId = await examplePatient(client);
    const obs = await create(client, observation(`Patient/${patientId}`));
    const body = await data(
      api,
      client,
      `{ Observation(id: "${obs.id}") { subject { resource { ...Names } } } }
       fragment Names on Patient { name @flatten { family } }`,
    );
    expect(body.Observation.subject.resource).toEqual({ family: ['Chalmers', 'Windsor'] });
  });
});

describe('@first', () => {
  it('keeps the first item of a list, as a single value', async () => {
    expect(await onPatient('name @first { family }')).toEqual({ name: { family: 'Chalmers' } });
  });

  it('takes the first value of each flattened item', async () => {
    expect(await onPatient('name @flatten { given @first family }')).toEqual({
      given: ['Peter', 'Jim', 'Peter'],
      family: ['Chalmers', 'Windsor'],
    });
  });
});

describe('@singleton', () => {
  it('gives a single value inside a @flatten', async () => {
    expect(await onPatient('identifier @flatten { system @singleton value @singleton }')).toEqual({
      system: 'urn:oid:1.2.36',
      value: '12345',
    });
  });

  it('is an error, with an OperationOutcome, when the flattened field has more than one value', async () => {
    const client = api.newProject();
    const id = await examplePatient(client);
    const res = await graphql(api, client, `{ Patient(id: "${id}") { active name @flatten { family @singleton } } }`);
    const error = onlyError(res);
    expect(error.code).toBe('invalid');
    expect(error.text).toMatch(/@singleton on "family": the query gives 2 values/);
    expect(error.path).toEqual(['Patient', 'family']);
    expect(res.body.data).toEqual({ Patient: { active: true, family: null } });
  });

  it('accepts one value after @first', async () => {
    expect(await onPatient('name @flatten @first { given family @singleton }')).toEqual({
      given: ['Peter', 'James'],
      family: 'Chalmers',
    });
  });
});

describe('@slice', () => {
  it("suffixes the flattened names with the value of a FHIRPath on each item, read from the item's data", async () => {
    // `use` is not selected: the path reads the resource's data, not the query's output.
    expect(await onPatient('name @flatten @slice(path: "use") { given family @singleton }')).toEqual({
      'given.official': ['Peter', 'James'],
      'family.official': 'Chalmers',
      'given.usual': ['Jim'],
      'given.maiden': ['Peter', 'James'],
      'family.maiden': 'Windsor',
    });
  });

  it('suffixes with the position of each item with $index', async () => {
    expect(await onPatient('name @flatten @slice(path: "$index") { family @singleton }')).toEqual({
      'family.0': 'Chalmers',
      'family.2': 'Windsor',
    });
  });

  it('takes the path from a variable', async () => {
    const client = api.newProject();
    const id = await examplePatient(client);
    const query = `query Sliced($path: String!) { Patient(id: "${id}") { name @flatten @slice(path: $path) { family @singleton } } }`;
    const body = await data(api, client, query, { path: 'use' });
    expect(body.Patient).toEqual({ 'family.official': 'Chalmers', 'family.maiden': 'Windsor' });
  });

  it('is refused without @flatten, before execution', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, '{ PatientList { name @slice(path: "use") { family } } }');
    const error = onlyError(res);
    expect(error.code).toBe('invalid');
    expect(error.text).toBe('@slice on "name" needs @flatten on the same field');
    expect(res.body.data).toBeUndefined();
  });
});

describe('without directives', () => {
  it('leaves the result exactly as GraphQL gives it', async () => {
    expect(await onPatient('active name { use family }')).toEqual({
      active: true,
      name: [
        { use: 'official', family: 'Chalmers' },
        { use: 'usual', family: null },
        { use: 'maiden', family: 'Windsor' },
      ],
    });
  });
});
