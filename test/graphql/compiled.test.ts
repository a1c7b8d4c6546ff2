import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, everyWay, observation, postGraphQL } from './resource-helpers.js';

// A query runs through the standard executor the first time, compiled from its second run on
// (src/graphql/compiled.ts) and as a prepared operation from its third (src/graphql/prepared.ts).
// The client must not see the difference: each query below runs three times and the answers must
// be the same, byte for byte, status included.

const api = await useTestServer();

const post = (client: ProjectClient, path: string, query: string, variables?: Record<string, unknown>) => postGraphQL(api, client, path, query, variables);

/** The answers of the same request, standard, compiled and prepared (all the same), parsed. */
const twice = (client: ProjectClient, query: string, variables?: Record<string, unknown>, path = '/fhir/R4/$graphql') =>
  everyWay(api, client, query, variables, path);

async function setup() {
  const client = api.newProject();
  const patient = await create(
    client,
    patientBody({
      gender: 'female',
      identifier: [{ system: 'urn:oid:1.2.36', value: '12345' }],
      name: [
        { use: 'official', family: 'Chalmers', given: ['Peter', 'James'] },
        { use: 'usual', given: ['Jim'] },
      ],
      extension: [{ url: 'http://example.org/a', valueString: 'A' }, { url: 'http://example.org/b', valueBoolean: true }],
    }),
  );
  const observations = [
    await create(client, observation(`Patient/${patient.id}`, { valueQuantity: { value: 70, unit: '/min' } })),
    await create(client, observation('Patient/does-not-exist', { valueQuantity: { value: 71, unit: '/min' } })),
  ];
  return { client, patient, observations };
}

describe('compiled queries answer as the standard executor does', () => {
  it('reads with variables, aliases, fragments, enums, __typename and list arguments', async () => {
    const { client, patient } = await setup();
    const body = await twice(
      client,
      `query Read($id: ID!, $withIds: Boolean!) {
        p: Patient(id: $id) {
          __typename id gender ...Names
          identifier @include(if: $withIds) { value }
          official: name(fhirpath: "use = 'official'") { given }
          second: name(_offset: 1, _count: 1) { given }
          extension(url: "http://example.org/b") { valueBoolean }
        }
      }
      fragment Names on Patient { name { family given } }`,
      { id: patient.id, withIds: false },
    );
    expect(body.data.p).toMatchObject({ __typename: 'Patient', gender: 'female', official: [{ given: ['Peter', 'James'] }] });
    expect(body.data.p.identifier).toBeUndefined();
  });

  it('lists with resolved references, an unresolvable one reported on its field', async () => {
    const { client, patient } = await setup();
    const body = await twice(
      client,
      `{ ObservationList(_sort: "_lastUpdated", _count: 10) {
          id valueQuantity { value unit }
          subject { reference resource { ... on Patient { id name { family } } } }
        } }`,
    );
    expect(body.data.ObservationList[0].subject.resource.id).toBe(patient.id);
    expect(body.data.ObservationList[1].subject.resource).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]).toMatchObject({ path: ['ObservationList', 1, 'subject', 'resource'], locations: [{ line: 3, column: 31 }] });
  });

  it('answers connections and reverse reference lists', async () => {
    const { client, patient } = await setup();
    await twice(client, '{ PatientConnection(_count: 1) { count offset pageSize first next last edges { mode resource { id } } } }');
    const body = await twice(client, `{ Patient(id: "${patient.id}") { ObservationList(_reference: subject) { id } } }`);
    expect(body.data.Patient.ObservationList).toHaveLength(1);
  });

  it('reshapes with the FHIR directives', async () => {
    const { client, patient } = await setup();
    const body = await twice(
      client,
      `{ Patient(id: "${patient.id}") { name @flatten @slice(path: "use") { given } identifier @first @flatten { value } gender @singleton } }`,
    );
    expect(body.data.Patient).toMatchObject({ 'given.official': ['Peter', 'James'], value: '12345' });
  });

  it('reports a missing variable as a request error', async () => {
    const { client } = await setup();
    const standard = await post(client, '/fhir/R4/$graphql', 'query ($id: ID!) { Patient(id: $id) { id } }');
    const compiled = await post(client, '/fhir/R4/$graphql', 'query ($id: ID!) { Patient(id: $id) { id } }');
    expect(standard.status).toBe(400);
    expect(compiled).toEqual(standard);
  });

  it('reports a missing resource with its OperationOutcome', async () => {
    const { client } = await setup();
    const body = await twice(client, '{ Patient(id: "nope") { id } }');
    expect(body.errors![0].extensions.resource.resourceType).toBe('OperationOutcome');
  });

  it('runs instance-level queries on their resource', async () => {
    const { client, patient } = await setup();
    const body = await twice(client, '{ id name { family } }', undefined, `/fhir/R4/Patient/${patient.id}/$graphql`);
    expect(body.data).toEqual({ id: patient.id, name: [{ family: 'Chalmers' }, { family: null }] });
    // The same text on the system endpoint is another schema: refused there, whatever ran before.
    const system = await post(client, '/fhir/R4/$graphql', '{ id name { family } }');
    expect(system.status).toBe(400);
  });

  it('keeps mutations on the standard executor', async () => {
    const { client } = await setup();
    const query = 'mutation ($family: String) { PatientCreate(res: { name: [{ family: $family }] }) { name { family } } }';
    for (let run = 0; run < 3; run++) {
      const res = await post(client, '/fhir/R4/$graphql', query, { family: `Run${run}` });
      expect(JSON.parse(res.text)).toEqual({ data: { PatientCreate: { name: [{ family: `Run${run}` }] } } });
    }
  });
});
