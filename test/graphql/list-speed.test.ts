import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient, type TestServer } from '../helpers/server.js';
import { create, data, graphql, observation } from './resource-helpers.js';

/**
 * The GraphQL list path's shortcuts must not change answers: parsed versions are reused across
 * requests (src/graphql/parsed-cache.ts), a subject the server already parsed is not sent again
 * by the database (Repository.readVersions' held versions), and on the embedded database a search
 * returns only versions whose text comes from memory or, when not there, from the history.
 */
const api = await useTestServer();
// A read cache of one entry: the matches of a search are (almost) never in it.
const evicting = await useTestServer({ RESOURCE_CACHE_SIZE: '1' });

const PAGE = `query ($code: [String!]) {
  ObservationList(code: $code, _count: 100, _sort: "_id") {
    id status valueQuantity { value unit }
    subject { reference resource { ... on Patient { id name { family given } } } }
  }
}`;

/** Patients and one Observation about each, all with a code of their own. */
async function page(server: TestServer, count: number): Promise<{ client: ProjectClient; code: string; patients: any[]; observations: any[] }> {
  const client = server.newProject();
  const code = `code-${Math.random().toString(36).slice(2)}`;
  const patients = await Promise.all(Array.from({ length: count }, (_, i) => create(client, patientBody({ name: [{ family: `F${i}`, given: [`G${i}`] }] }))));
  const observations = await Promise.all(
    patients.map((patient, i) =>
      create(client, observation(`Patient/${patient.id}`, { code: { coding: [{ system: 'http://x', code }] }, valueQuantity: { value: i, unit: 'bpm' } })),
    ),
  );
  return { client, code, patients, observations };
}

/** The page as REST search gives it, shaped as the query selects it. */
async function expectedPage(client: ProjectClient, code: string): Promise<unknown[]> {
  const bundle = (await client.get(`/Observation?code=${code}&_count=100&_sort=_id`)).body;
  const list = [];
  for (const { resource } of bundle.entry ?? []) {
    const patient = (await client.get(`/${resource.subject.reference}`)).body;
    list.push({
      id: resource.id,
      status: resource.status,
      valueQuantity: { value: resource.valueQuantity.value, unit: resource.valueQuantity.unit },
      subject: { reference: resource.subject.reference, resource: { id: patient.id, name: patient.name.map((n: any) => ({ family: n.family, given: n.given })) } },
    });
  }
  return list;
}

async function statementsOf(server: TestServer, client: ProjectClient, query: string, variables: Record<string, unknown>) {
  const db = server.server.services.db;
  const before = db.statementCount;
  const body = await data(server, client, query, variables);
  return { body, statements: db.statementCount - before };
}

describe('GraphQL lists', () => {
  it('answers a repeated page as REST does, each time', async () => {
    const { client, code } = await page(api, 5);
    const expected = await expectedPage(client, code);
    for (let run = 0; run < 3; run++) expect((await data(api, client, PAGE, { code })).ObservationList).toEqual(expected);
  });

  it('shows a subject updated since the last query with its new name', async () => {
    const { client, code, patients } = await page(api, 3);
    await data(api, client, PAGE, { code });
    const changed = patients[1];
    expect((await client.put(`/Patient/${changed.id}`, { ...changed, name: [{ family: 'Renamed', given: ['New'] }] })).status).toBe(200);

    const list = (await data(api, client, PAGE, { code })).ObservationList;
    const subject = list.find((item: any) => item.subject.reference === `Patient/${changed.id}`).subject.resource;
    expect(subject.name).toEqual([{ family: 'Renamed', given: ['New'] }]);
    expect(list).toEqual(await expectedPage(client, code));
  });

  it('shows a match updated since the last query with its new values', async () => {
    const { client, code, observations } = await page(api, 3);
    await data(api, client, PAGE, { code });
    const changed = observations[2];
    expect((await client.put(`/Observation/${changed.id}`, { ...changed, status: 'amended', valueQuantity: { value: 99, unit: 'bpm' } })).status).toBe(200);

    const list = (await data(api, client, PAGE, { code })).ObservationList;
    expect(list.find((item: any) => item.id === changed.id)).toMatchObject({ status: 'amended', valueQuantity: { value: 99, unit: 'bpm' } });
  });

  it('leaves out a match deleted since the last query, and errors on a deleted subject', async () => {
    const { client, code, patients, observations } = await page(api, 3);
    await data(api, client, PAGE, { code });
    expect((await client.delete(`/Observation/${observations[0].id}`)).status).toBe(200);
    expect((await client.delete(`/Patient/${patients[1].id}`)).status).toBe(200);

    const res = await graphql(api, client, PAGE, { code });
    const ids = res.body.data.ObservationList.map((item: any) => item.id);
    expect(ids).toEqual([observations[1].id, observations[2].id].sort());
    expect(res.body.errors?.map((error) => error.extensions?.resource?.issue[0].code)).toEqual(['not-found']);
  });

  it('costs at most 3 statements for a page whose versions are in no cache, and answers as REST', async () => {
    const { client, code } = await page(evicting, 20);
    const first = await statementsOf(evicting, client, PAGE, { code });
    expect(first.body.ObservationList).toEqual(await expectedPage(client, code));
    expect(first.statements).toBeLessThanOrEqual(3);
  });

  it('costs at most 3 statements for a repeated page, and answers the same', async () => {
    const { client, code } = await page(evicting, 20);
    const first = await statementsOf(evicting, client, PAGE, { code });
    const second = await statementsOf(evicting, client, PAGE, { code });
    expect(second.body).toEqual(first.body);
    expect(second.statements).toBeLessThanOrEqual(3);
  });

  it('shows a match updated after its page was repeated, in at most 3 statements', async () => {
    // Repeated pages of a type are searched for their versions only (their JSON comes from memory).
    const { client, code, observations } = await page(api, 4);
    for (let run = 0; run < 3; run++) await data(api, client, PAGE, { code });
    const changed = observations[1];
    expect((await client.put(`/Observation/${changed.id}`, { ...changed, status: 'amended', valueQuantity: { value: 42, unit: 'bpm' } })).status).toBe(200);

    const after = await statementsOf(api, client, PAGE, { code });
    expect(after.body.ObservationList.find((item: any) => item.id === changed.id)).toMatchObject({ status: 'amended', valueQuantity: { value: 42, unit: 'bpm' } });
    expect(after.body.ObservationList).toEqual(await expectedPage(client, code));
    expect(after.statements).toBeLessThanOrEqual(3);
  });

  it('keeps the search order and page size when the matches come without their JSON', async () => {
    const { client, code, observations } = await page(evicting, 12);
    const body = await data(evicting, client, `query ($code: [String!]) { ObservationList(code: $code, _count: 5, _sort: "-_id") { id } }`, { code });
    const expected = observations.map((o) => o.id).sort().reverse().slice(0, 5);
    expect(body.ObservationList.map((item: any) => item.id)).toEqual(expected);
  });
});
