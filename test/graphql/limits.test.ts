import { getIntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient, type TestServer } from '../helpers/server.js';
import { create, data, graphql, onlyError, type GraphQLResponse } from './resource-helpers.js';

// Default limits: depth 15, cost 50000, lists of at most 1000 items, introspection on.
const api = await useTestServer();
// Another server with introspection switched off and smaller limits.
const strict = await useTestServer({
  GRAPHQL_INTROSPECTION: 'false',
  GRAPHQL_MAX_DEPTH: '4',
  GRAPHQL_MAX_COST: '100',
  GRAPHQL_MAX_LIST_SIZE: '50',
});

/** A client whose token is already verified and cached, so that requests cost no statement to authenticate. */
async function warmClient(server: TestServer): Promise<ProjectClient> {
  const client = server.newProject();
  await data(server, client, '{ __typename }');
  return client;
}

/** Runs `query` and returns its response with the number of SQL statements it caused. */
async function counted(server: TestServer, client: ProjectClient, query: string, variables?: Record<string, unknown>) {
  const db = server.server.services.db;
  const before = db.statementCount;
  const res = await graphql(server, client, query, variables);
  return { res, statements: db.statementCount - before };
}

/** `PatientList { extension { extension { ... { url } } } }`: `levels` levels of fields, each list of one item. */
function nestedExtensions(levels: number): string {
  let selection = 'url';
  for (let i = 1; i < levels - 1; i++) selection = `extension(_count: 1) { ${selection} }`;
  return `{ PatientList(_count: 1) { ${selection} } }`;
}

function expectTooCostly(res: GraphQLResponse, text: RegExp): void {
  const error = onlyError(res);
  expect(error.code).toBe('too-costly');
  expect(error.text).toMatch(text);
  expect(res.body.data ?? null).toBeNull();
}

describe('list size', () => {
  it('refuses a _count above GRAPHQL_MAX_LIST_SIZE before any database work', async () => {
    const client = await warmClient(api);
    const { res, statements } = await counted(api, client, '{ PatientList(_count: 1001) { id } }');
    expectTooCostly(res, /_count 1001 on "PatientList" is more than the 1000 items a list may have/);
    expect(statements).toBe(0);
  });

  it('accepts a _count of exactly GRAPHQL_MAX_LIST_SIZE', async () => {
    const client = api.newProject();
    await create(client, patientBody());
    const body = await data(api, client, '{ PatientList(_count: 1000) { id } }');
    expect(body.PatientList).toHaveLength(1);
  });

  it('applies to the list fields of a resource too', async () => {
    const client = await warmClient(api);
    const { res, statements } = await counted(api, client, '{ PatientList { name(_count: 5000) { family } } }');
    expectTooCostly(res, /_count 5000 on "name"/);
    expect(statements).toBe(0);
  });

  it('checks a _count given by a variable before the first resolver runs', async () => {
    const client = await warmClient(api);
    const query = 'query Page($n: Int) { PatientList(_count: $n) { id } }';
    const { res, statements } = await counted(api, client, query, { n: 5000 });
    expectTooCostly(res, /_count 5000 on "PatientList"/);
    expect(statements).toBe(0);
  });

  it('runs the same query when the variable is within the limit', async () => {
    const client = api.newProject();
    await create(client, patientBody());
    const body = await data(api, client, 'query Page($n: Int) { PatientList(_count: $n) { id } }', { n: 10 });
    expect(body.PatientList).toHaveLength(1);
  });
});

describe('depth', () => {
  it('refuses a query deeper than GRAPHQL_MAX_DEPTH before any database work', async () => {
    const client = await warmClient(api);
    const { res, statements } = await counted(api, client, nestedExtensions(16));
    expectTooCostly(res, /too deep: 16 levels of fields, the limit is 15/);
    expect(statements).toBe(0);
  });

  it('runs a query at the depth limit', async () => {
    const client = api.newProject();
    await create(client, patientBody());
    const body = await data(api, client, nestedExtensions(15));
    expect(body.PatientList).toHaveLength(1);
  });

  it('counts the fields of fragments where they are spread', async () => {
    const client = await warmClient(strict);
    const query = `{ PatientList(_count: 1) { ...Names } }
      fragment Names on Patient { name(_count: 1) { period { extension(_count: 1) { url } } } }`;
    const { res } = await counted(strict, client, query);
    expectTooCostly(res, /too deep: 5 levels of fields, the limit is 4/);
  });
});

describe('cost', () => {
  it('refuses nested searches whose pages multiply beyond GRAPHQL_MAX_COST, before any database work', async () => {
    const client = await warmClient(api);
    const query = '{ PatientList(_count: 1000) { id ObservationList(_reference: subject, _count: 100) { id } } }';
    const { res, statements } = await counted(api, client, query);
    // 1000 × (1 + id 1 + 100 × (1 + id 1)) = 202000
    expectTooCostly(res, /estimated cost is 202000, the limit is 50000/);
    expect(statements).toBe(0);
  });

  it('counts a search without _count as a page of 20 and a repeating element as 5 items', async () => {
    const client = await warmClient(strict);
    // PatientList: 20 × (1 + name 5 × (1 + family 1)) = 220 > 100
    const { res, statements } = await counted(strict, client, '{ PatientList { name { family } } }');
    expectTooCostly(res, /estimated cost is 220, the limit is 100/);
    expect(statements).toBe(0);
  });

  it('multiplies the edges of a connection by its _count', async () => {
    const client = await warmClient(strict);
    // PatientConnection 1 + count 1 + edges 40 × (1 + resource 1 + id 1) = 122 > 100
    const { res } = await counted(strict, client, '{ PatientConnection(_count: 40) { count edges { resource { id } } } }');
    expectTooCostly(res, /estimated cost is 122/);
  });

  it('counts every alias of a field', async () => {
    const client = await warmClient(strict);
    const aliases = Array.from({ length: 51 }, (_, i) => `a${i}: health { ok }`).join(' ');
    const { res, statements } = await counted(strict, client, `{ ${aliases} }`);
    expectTooCostly(res, /estimated cost is 102, the limit is 100/);
    expect(statements).toBe(0);
  });

  it('costs an operation field 1000, however little of its answer the query reads', async () => {
    const client = await warmClient(strict);
    const { res, statements } = await counted(strict, client, '{ ValueSetExpand(url: "http://example.org/vs") { id } }');
    expectTooCostly(res, /estimated cost is 1001, the limit is 100/);
    expect(statements).toBe(0);
  });

  it("counts the lists of an operation's answer as its count argument", async () => {
    const client = await warmClient(api);
    const expand = 'ValueSetExpand(url: "http://example.org/vs", count: 10000) { expansion { contains { system code display } } }';
    // 2 × (1000 + expansion 1 + 10000 × (1 + 3)) = 82002
    const { res, statements } = await counted(api, client, `{ a: ${expand} b: ${expand} }`);
    expectTooCostly(res, /estimated cost is 82002, the limit is 50000/);
    expect(statements).toBe(0);
  });

  it('counts every alias of an operation field against GRAPHQL_MAX_OPERATION_FIELDS', async () => {
    const client = await warmClient(api);
    const aliases = Array.from({ length: 11 }, (_, i) => `a${i}: ValueSetExpand(url: "http://example.org/vs", count: 1) { id }`);
    const { res, statements } = await counted(api, client, `{ ${aliases.join(' ')} }`);
    expectTooCostly(res, /11 operation fields \(aliases included\), the limit is 10/);
    expect(statements).toBe(0);
  });

  it('runs a query within the limits', async () => {
    const client = strict.newProject();
    await create(client, patientBody({ name: [{ family: 'Within' }] }));
    const body = await data(strict, client, '{ PatientList(_count: 5) { name { family } } }');
    expect(body.PatientList).toEqual([{ name: [{ family: 'Within' }] }]);
  });
});

describe('introspection', () => {
  it('is on by default, and the standard introspection query passes the limits', async () => {
    const client = api.newProject();
    const res = await graphql(api, client, getIntrospectionQuery());
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.__schema.queryType).toEqual({ name: 'Query', kind: 'OBJECT' });
  });

  it('refuses more than one __schema field in a query, aliases included', async () => {
    const client = await warmClient(api);
    const aliases = Array.from({ length: 100 }, (_, i) => `a${i}: __schema { types { name fields { name } } }`);
    const { res, statements } = await counted(api, client, `{ ${aliases.join(' ')} }`);
    expectTooCostly(res, /100 __schema and 0 __type fields \(aliases included\), the limit is 1 __schema and 10 __type fields/);
    expect(statements).toBe(0);
  });

  it('refuses more than ten __type fields in a query', async () => {
    const client = await warmClient(api);
    const aliases = Array.from({ length: 11 }, (_, i) => `a${i}: __type(name: "Query") { fields { name } }`);
    const { res } = await counted(api, client, `{ ${aliases.join(' ')} }`);
    expectTooCostly(res, /0 __schema and 11 __type fields/);
  });

  it('is refused when GRAPHQL_INTROSPECTION=false, with an OperationOutcome', async () => {
    const client = await warmClient(strict);
    const res = await graphql(strict, client, '{ __schema { queryType { name } } }');
    const error = onlyError(res);
    expect(error.code).toBe('forbidden');
    expect(error.text).toMatch(/introspection is disabled/);
    expect(res.body.data).toBeUndefined();
  });

  it('leaves __typename available when switched off', async () => {
    const client = strict.newProject();
    expect(await data(strict, client, '{ __typename }')).toEqual({ __typename: 'Query' });
  });
});
