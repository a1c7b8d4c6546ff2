import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, data, graphql, observation, onlyError } from './resource-helpers.js';

// Reverse reference lists under a resource (`Patient { ObservationList(_reference: subject, ...) }`)
// take `_params`, the REST search parameters the top-level lists take, with the same rules: all
// conditions AND (here also with the reference to the parent), result parameters refused.

const api = await useTestServer();

const HEART_RATE = { coding: [{ system: 'http://loinc.org', code: '8867-4' }], text: 'heart rate' };
const WEIGHT = { coding: [{ system: 'http://loinc.org', code: '29463-7' }], text: 'weight' };

/** Two patients with a heart rate and a weight each, and a preliminary heart rate for the first. */
async function setup() {
  const client = api.newProject();
  const [one, two] = [await create(client, patientBody()), await create(client, patientBody())];
  const observations = {
    oneHeart: await create(client, observation(`Patient/${one.id}`, { code: HEART_RATE })),
    oneWeight: await create(client, observation(`Patient/${one.id}`, { code: WEIGHT })),
    onePreliminary: await create(client, observation(`Patient/${one.id}`, { code: HEART_RATE, status: 'preliminary' })),
    twoHeart: await create(client, observation(`Patient/${two.id}`, { code: HEART_RATE })),
    twoWeight: await create(client, observation(`Patient/${two.id}`, { code: WEIGHT })),
  };
  return { client, one, two, observations };
}

const ids = (list: { id: string }[]) => list.map((item) => item.id).sort();

/** The ids the REST search `Observation?subject=Patient/<id>&<query>` finds. */
async function restIds(client: ProjectClient, patientId: string, query: string): Promise<string[]> {
  const res = await client.get(`/Observation?subject=Patient/${patientId}&${query}`);
  expect(res.status, res.text).toBe(200);
  return (res.body.entry ?? []).map((entry: { resource: { id: string } }) => entry.resource.id).sort();
}

describe('reverse reference lists with _params', () => {
  it('keeps the resources matching the parameters, as the REST search with the reference does', async () => {
    const { client, one, observations } = await setup();
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Patient(id: $id) {
        heart: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|8867-4" }]) { id }
        finalHeart: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|8867-4" }, { name: "status", value: "final" }]) { id }
        notHeart: ObservationList(_reference: subject, _params: [{ name: "code:not", value: "http://loinc.org|8867-4" }]) { id }
      } }`,
      { id: one.id },
    );
    expect(ids(body.Patient.heart)).toEqual([observations.oneHeart.id, observations.onePreliminary.id].sort());
    expect(ids(body.Patient.heart)).toEqual(await restIds(client, one.id, 'code=http://loinc.org|8867-4'));
    expect(ids(body.Patient.finalHeart)).toEqual([observations.oneHeart.id]);
    expect(ids(body.Patient.notHeart)).toEqual([observations.oneWeight.id]);
    expect(ids(body.Patient.notHeart)).toEqual(await restIds(client, one.id, 'code:not=http://loinc.org|8867-4'));
  });

  it('answers an empty list when a parameter matches nothing of the parent', async () => {
    const { client, one } = await setup();
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Patient(id: $id) {
        none: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|0000-0" }]) { id }
        all: ObservationList(_reference: subject, _params: []) { id }
      } }`,
      { id: one.id },
    );
    expect(body.Patient.none).toEqual([]);
    expect(body.Patient.all).toHaveLength(3);
  });

  it('combines _params with _count, _offset and _sort', async () => {
    const { client, one, observations } = await setup();
    const expected = [observations.oneHeart.id, observations.onePreliminary.id].sort();
    const body = await data(
      api,
      client,
      `query ($id: ID!) { Patient(id: $id) {
        first: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|8867-4" }], _sort: "_id", _count: 1) { id }
        second: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|8867-4" }], _sort: "_id", _count: 1, _offset: 1) { id }
      } }`,
      { id: one.id },
    );
    expect(body.Patient.first).toEqual([{ id: expected[0] }]);
    expect(body.Patient.second).toEqual([{ id: expected[1] }]);
  });

  it('refuses a result parameter in _params, on that field only', async () => {
    const { client, one } = await setup();
    for (const name of ['_count', '_sort', '_include', '_total', '_summary']) {
      const res = await graphql(
        api,
        client,
        `query ($id: ID!, $name: String!) { Patient(id: $id) { id ObservationList(_reference: subject, _params: [{ name: $name, value: "1" }]) { id } } }`,
        { id: one.id, name },
      );
      const error = onlyError(res);
      expect(error.code).toBe('invalid');
      expect(error.text).toContain(`_params cannot carry ${name}`);
      expect(error.path).toEqual(['Patient', 'ObservationList']);
      expect(res.body.data).toEqual({ Patient: { id: one.id, ObservationList: null } });
    }
  });

  it('refuses a parameter the search does not know, as the top-level list does', async () => {
    const { client, one } = await setup();
    const unknown = '[{ name: "no-such-parameter", value: "x" }]';
    const top = await graphql(api, client, `{ ObservationList(_params: ${unknown}) { id } }`);
    const nested = await graphql(api, client, `query ($id: ID!) { Patient(id: $id) { ObservationList(_reference: subject, _params: ${unknown}) { id } } }`, {
      id: one.id,
    });
    expect(onlyError(nested).code).toBe(onlyError(top).code);
  });

  it('batches the lists of one level: each parent gets what its own REST search gives', async () => {
    const { client, one, two } = await setup();
    // Three more patients with one heart rate each: one search per parent would be five.
    for (let i = 0; i < 3; i++) {
      const patient = await create(client, patientBody());
      await create(client, observation(`Patient/${patient.id}`, { code: HEART_RATE }));
    }
    await data(api, client, '{ health { ok } }'); // the token is verified and cached before counting

    const db = api.server.services.db;
    const before = db.statementCount;
    const body = await data(
      api,
      client,
      `{ PatientList(_sort: "_id") { id ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|8867-4" }], _sort: "_id") { id status } } }`,
    );
    const statements = db.statementCount - before;

    expect(body.PatientList).toHaveLength(5);
    expect(body.PatientList.map((patient: { id: string }) => patient.id)).toEqual(expect.arrayContaining([one.id, two.id]));
    for (const patient of body.PatientList) {
      expect(ids(patient.ObservationList)).toEqual(await restIds(client, patient.id, 'code=http://loinc.org|8867-4'));
    }
    expect(body.PatientList.find((patient: { id: string }) => patient.id === one.id).ObservationList).toHaveLength(2);
    expect(body.PatientList.find((patient: { id: string }) => patient.id === two.id).ObservationList).toHaveLength(1);
    // The patients' search, then one search for the five lists (and at most one read of versions not cached).
    expect(statements).toBeLessThanOrEqual(3);
  });

  it('keeps lists with different _params apart in one batch level', async () => {
    const { client, one, two, observations } = await setup();
    const body = await data(
      api,
      client,
      `{ PatientList(_sort: "_id") { id
        heart: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|8867-4" }, { name: "status", value: "final" }]) { id }
        weight: ObservationList(_reference: subject, _params: [{ name: "code", value: "http://loinc.org|29463-7" }]) { id }
      } }`,
    );
    const byId = new Map(body.PatientList.map((patient: { id: string }) => [patient.id, patient]));
    expect(byId.get(one.id)).toEqual({ id: one.id, heart: [{ id: observations.oneHeart.id }], weight: [{ id: observations.oneWeight.id }] });
    expect(byId.get(two.id)).toEqual({ id: two.id, heart: [{ id: observations.twoHeart.id }], weight: [{ id: observations.twoWeight.id }] });
  });

  it('takes chains and reverse chains in _params', async () => {
    const { client, one, observations } = await setup();
    const body = await data(
      api,
      client,
      `query ($id: ID!, $family: String!) { Patient(id: $id) {
        ObservationList(_reference: subject, _params: [{ name: "subject:Patient.family", value: $family }, { name: "code", value: "http://loinc.org|29463-7" }]) { id }
      } }`,
      { id: one.id, family: 'Chalmers' },
    );
    expect(body.Patient.ObservationList).toEqual([{ id: observations.oneWeight.id }]);
  });

  it('answers the same compiled as with the standard executor', async () => {
    const { client, one } = await setup();
    const query = `{ Patient(id: "${one.id}") { ObservationList(_reference: subject, _params: [{ name: "status", value: "preliminary" }]) { id status } } }`;
    const post = async () => {
      const res = await api.raw('/fhir/R4/$graphql', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json', ...(await client.authHeaders()) },
        body: JSON.stringify({ query }),
      });
      return { status: res.status, text: await res.text() };
    };
    const standard = await post();
    const compiled = await post();
    expect(compiled).toEqual(standard);
    expect(JSON.parse(standard.text).data.Patient.ObservationList).toEqual([{ id: expect.any(String), status: 'preliminary' }]);
  });

  it('is in the schema: _params beside _reference, _count, _offset and _sort', async () => {
    const client = api.newProject();
    const body = await data(api, client, '{ __type(name: "Patient") { fields { name args { name type { kind name ofType { kind name ofType { kind name } } } } } } }');
    const field = body.__type.fields.find((candidate: { name: string }) => candidate.name === 'ObservationList');
    expect(field.args.map((arg: { name: string }) => arg.name)).toEqual(['_reference', '_params', '_count', '_offset', '_sort']);
    expect(field.args[1].type).toEqual({ kind: 'LIST', name: null, ofType: { kind: 'NON_NULL', name: null, ofType: { kind: 'INPUT_OBJECT', name: 'SearchParam' } } });
  });
});
