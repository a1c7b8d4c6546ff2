import { describe, expect, it } from 'vitest';
import { nicknameSearchParameter, patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, data, graphql, onlyError } from './resource-helpers.js';

const api = await useTestServer();

async function patients(client: ProjectClient, n: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await create(client, patientBody(extra(i)))).id);
  return ids;
}

const restIds = async (client: ProjectClient, query: string): Promise<string[]> => {
  const res = await client.get(query);
  expect(res.status, res.text).toBe(200);
  return (res.body.entry ?? []).map((entry: { resource: { id: string } }) => entry.resource.id);
};

describe('TList: search', () => {
  it('matches what the REST search matches', async () => {
    const client = api.newProject();
    await patients(client, 3, (i) => ({ name: [{ family: i < 2 ? 'Alpha' : 'Beta' }], gender: i === 0 ? 'female' : 'male' }));
    const body = await data(api, client, `{ PatientList(family: "Alpha") { id } }`);
    expect(body.PatientList.map((p: { id: string }) => p.id).sort()).toEqual((await restIds(client, '/Patient?family=Alpha')).sort());
    expect(body.PatientList).toHaveLength(2);
  });

  it('repeats a parameter for each list value (AND) and keeps commas as OR', async () => {
    const client = api.newProject();
    const [a, b] = await patients(client, 3, (i) => ({ name: [{ family: ['Alpha', 'Beta', 'Gamma'][i] }], gender: i === 1 ? 'female' : 'male' }));
    const or = await data(api, client, `{ PatientList(family: "Alpha,Beta") { id } }`);
    expect(or.PatientList.map((p: { id: string }) => p.id).sort()).toEqual([a, b].sort());
    const and = await data(api, client, `{ PatientList(family: ["Alpha,Beta"], gender: ["female"]) { id } }`);
    expect(and.PatientList).toEqual([{ id: b }]);
  });

  it('names parameters with - as _ (general-practitioner → general_practitioner)', async () => {
    const client = api.newProject();
    const doctor = await create(client, { resourceType: 'Practitioner', name: [{ family: 'House' }] });
    const [mine] = await patients(client, 2, (i) => (i === 0 ? { generalPractitioner: [{ reference: `Practitioner/${doctor.id}` }] } : {}));
    const body = await data(api, client, `query ($gp: String!) { PatientList(general_practitioner: [$gp]) { id } }`, {
      gp: `Practitioner/${doctor.id}`,
    });
    expect(body.PatientList).toEqual([{ id: mine }]);
  });

  it('sorts with _sort and pages with _count and _offset, as REST does', async () => {
    const client = api.newProject();
    await patients(client, 5, (i) => ({ birthDate: `199${i}-01-01` }));
    const rest = await restIds(client, '/Patient?_sort=-birthdate&_count=2&_offset=1');
    const body = await data(api, client, `{ PatientList(_sort: "-birthdate", _count: 2, _offset: 1) { id birthDate } }`);
    expect(body.PatientList.map((p: { id: string }) => p.id)).toEqual(rest);
    expect(body.PatientList.map((p: { birthDate: string }) => p.birthDate)).toEqual(['1993-01-01', '1992-01-01']);
  });

  it('refuses an invalid parameter value with the search error as OperationOutcome', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, `{ PatientList(birthdate: "not-a-date") { id } }`);
    expect(res.body.data).toEqual({ PatientList: null });
    expect(onlyError(res).code).toBe('invalid');
  });

  it('refuses _sort on a parameter the type does not have', async () => {
    const client = api.newProject();
    const error = onlyError(await graphql(api, client, `{ PatientList(_sort: "nonsense") { id } }`));
    expect(error.code).toBe('invalid');
    expect(error.outcome.issue[0].expression).toEqual(['_sort']);
  });

  it('refuses _count over 1000', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, `{ PatientList(_count: 1001) { id } }`);
    expect(res.body.data?.PatientList ?? null).toBeNull();
    expect(res.body.errors?.length).toBeGreaterThan(0);
    expect(JSON.stringify(res.body.errors)).toContain('1000');
  });

  it('refuses _offset above the search maximum, as REST does', async () => {
    const client = api.newProject();
    const rest = await client.get('/Patient?_offset=10001');
    expect(rest.status).toBe(400);
    const error = onlyError(await graphql(api, client, `{ PatientList(_offset: 10001) { id } }`));
    expect(error.code).toBe('invalid');
    expect(error.text).toBe(rest.body.issue[0].details.text);
  });
});

const PAGE = `query ($cursor: String, $count: Int, $sort: String) {
  PatientConnection(_count: $count, _cursor: $cursor, _sort: $sort) {
    count offset pageSize first previous next last
    edges { mode score resource { id } }
  }
}`;

type Page = {
  count: number | null;
  offset: number | null;
  pageSize: number;
  first: string | null;
  previous: string | null;
  next: string | null;
  last: string | null;
  edges: { mode: string; score: number | null; resource: { id: string } }[];
};

async function page(client: ProjectClient, variables: Record<string, unknown>): Promise<Page> {
  return (await data(api, client, PAGE, variables)).PatientConnection as Page;
}

/** Follows `next` from the first page; every id seen, in order, and the number of pages. */
async function walk(client: ProjectClient, variables: Record<string, unknown>): Promise<{ ids: string[]; pages: Page[] }> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const current = await page(client, { ...variables, cursor });
    pages.push(current);
    cursor = current.next;
  } while (cursor !== null && pages.length < 50);
  return { ids: pages.flatMap((p) => p.edges.map((edge) => edge.resource.id)), pages };
}

describe('TList: _params, REST parameters a typed argument cannot spell', () => {
  it('takes a modifier (name:exact) and matches what REST matches', async () => {
    const client = api.newProject();
    await patients(client, 2, (i) => ({ name: [{ family: i === 0 ? 'Smith' : 'Smithson' }] }));
    const body = await data(api, client, `{ PatientList(_params: [{ name: "family:exact", value: "Smith" }]) { id } }`);
    const rest = await restIds(client, '/Patient?family:exact=Smith');
    expect(rest).toHaveLength(1);
    expect(body.PatientList.map((p: { id: string }) => p.id)).toEqual(rest);
  });

  it('takes a chained parameter, combined with typed arguments (AND)', async () => {
    const client = api.newProject();
    const [ann, bob] = await patients(client, 2, (i) => ({ name: [{ family: i === 0 ? 'Annable' : 'Bobbins' }] }));
    await create(client, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${ann}` } });
    const wanted = await create(client, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${bob}` } });
    await create(client, { resourceType: 'Observation', status: 'preliminary', code: { text: 'x' }, subject: { reference: `Patient/${bob}` } });
    const body = await data(api, client, `{ ObservationList(status: "final", _params: [{ name: "subject:Patient.family", value: "Bobbins" }]) { id } }`);
    expect(body.ObservationList).toEqual([{ id: wanted.id }]);
  });

  it('takes a search parameter the project defined itself', async () => {
    const client = api.newProject();
    const parameter = await client.post('/SearchParameter', nicknameSearchParameter());
    expect(parameter.status).toBe(201);
    const [ace] = await patients(client, 2, (i) => ({ name: [{ use: i === 0 ? 'nickname' : 'official', given: ['Ace'] }] }));
    const body = await data(api, client, `{ PatientList(_params: [{ name: "nickname", value: "ace" }]) { id } }`);
    expect(body.PatientList).toEqual([{ id: ace }]);
  });

  it('refuses an unknown modifier with the search error as OperationOutcome', async () => {
    const client = api.newProject();
    const error = onlyError(await graphql(api, client, `{ PatientList(_params: [{ name: "family:nonsense", value: "x" }]) { id } }`));
    expect(error.code).toBe('invalid');
    expect(error.text).toContain('nonsense');
  });

  it('refuses result parameters, which have arguments of their own', async () => {
    const client = api.newProject();
    const error = onlyError(await graphql(api, client, `{ PatientList(_params: [{ name: "_count", value: "5000" }]) { id } }`));
    expect(error.code).toBe('invalid');
    expect(error.outcome.issue[0].expression).toEqual(['_params[0].name']);
  });
});

describe('TConnection: paging', () => {
  it('gives count, offset, pageSize and match edges', async () => {
    const client = api.newProject();
    const ids = await patients(client, 3);
    const first = await page(client, { count: 2, sort: '_id' });
    expect(first).toMatchObject({ count: 3, offset: 0, pageSize: 2, previous: null });
    expect(first.edges).toEqual([...ids].sort().slice(0, 2).map((id) => ({ mode: 'match', score: null, resource: { id } })));
    expect(first.next).toEqual(expect.any(String));
    expect(first.last).toEqual(expect.any(String));
  });

  it('follows next cursors (offset paging) through every match exactly once', async () => {
    const client = api.newProject();
    const ids = await patients(client, 7);
    const { ids: seen, pages } = await walk(client, { count: 3, sort: '_id' });
    expect(seen).toEqual([...ids].sort());
    expect(pages.map((p) => p.offset)).toEqual([0, 3, 6]);
    expect(pages[2].next).toBeNull();
  });

  it('follows next cursors of keyset paging (_sort=_lastUpdated, _count >= 20), then previous back', async () => {
    const client = api.newProject();
    const ids = await patients(client, 45);
    const { ids: seen, pages } = await walk(client, { count: 20, sort: '_lastUpdated' });
    expect(seen).toHaveLength(45);
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(pages).toHaveLength(3);
    const back = await page(client, { count: 20, sort: '_lastUpdated', cursor: pages[2].previous });
    expect(back.edges.map((edge) => edge.resource.id)).toEqual(pages[1].edges.map((edge) => edge.resource.id));
  });

  it('first and last cursors lead to the first and last pages', async () => {
    const client = api.newProject();
    const ids = (await patients(client, 5)).sort();
    const second = await page(client, { count: 2, sort: '_id', cursor: (await page(client, { count: 2, sort: '_id' })).next });
    const last = await page(client, { count: 2, sort: '_id', cursor: second.last });
    expect(last.edges.map((edge) => edge.resource.id)).toEqual([ids[4]]);
    const first = await page(client, { count: 2, sort: '_id', cursor: second.first });
    expect(first.edges.map((edge) => edge.resource.id)).toEqual(ids.slice(0, 2));
  });

  it('counts the total only as asked: _total, or the count field', async () => {
    const client = api.newProject();
    await patients(client, 3);
    const withCount = await data(api, client, `{ PatientConnection(_count: 1) { count } }`);
    expect(withCount.PatientConnection.count).toBe(3);
    const none = await data(api, client, `{ PatientConnection(_count: 1, _total: "none") { count pageSize } }`);
    expect(none.PatientConnection).toEqual({ count: null, pageSize: 1 });
  });

  it('refuses a damaged cursor', async () => {
    const client = api.newProject();
    const error = onlyError(await graphql(api, client, PAGE, { count: 2, cursor: 'not-a-cursor' }));
    expect(error.code).toBe('invalid');
    expect(error.outcome.issue[0].expression).toEqual(['_cursor']);
  });
});
