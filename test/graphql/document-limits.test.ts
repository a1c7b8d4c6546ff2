import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { onlyError, type GraphQLResponse } from './resource-helpers.js';

// Default limits: 10,000 tokens, nesting of 100 levels.
const api = await useTestServer();
const DEEP = 50_000;

/**
 * POSTs a query with its variables given as JSON text (JSON.stringify would itself overflow on a
 * value 50,000 levels deep), accepting the GraphQL response media type, whose status tells a
 * refused request (400) from an executed one.
 */
async function graphql(client: ProjectClient, query: string, variablesJson = 'null'): Promise<GraphQLResponse> {
  const res = await api.raw('/fhir/R4/$graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json', ...(await client.authHeaders()) },
    body: `{"query":${JSON.stringify(query)},"variables":${variablesJson}}`,
  });
  return { status: res.status, body: (await res.json()) as GraphQLResponse['body'] };
}

function expectRefused(res: GraphQLResponse, text: RegExp): void {
  expect(res.status).toBe(400);
  const error = onlyError(res);
  expect(error.code).toBe('too-costly');
  expect(error.text).toMatch(text);
  expect(res.body.data ?? null).toBeNull();
}

describe('document nesting (GRAPHQL_MAX_NESTING)', () => {
  it('refuses a selection 50,000 levels deep with 400', async () => {
    const client = api.newProject();
    const query = `{ PatientList { ${'extension { '.repeat(DEEP)}url${' }'.repeat(DEEP)} } }`;
    expectRefused(await graphql(client, query), /nested more than 100 levels deep/);
  });

  it('refuses a list literal 50,000 levels deep with 400', async () => {
    const client = api.newProject();
    const query = `{ PatientList(_id: ${'['.repeat(DEEP)}"x"${']'.repeat(DEEP)}) { id } }`;
    expectRefused(await graphql(client, query), /nested more than 100 levels deep/);
  });

  it('refuses an input object 50,000 levels deep with 400', async () => {
    const client = api.newProject();
    const query = `{ ValueSetExpand(valueSet: ${'{ a: '.repeat(DEEP)}1${' }'.repeat(DEEP)}) { id } }`;
    expectRefused(await graphql(client, query), /nested more than 100 levels deep/);
  });

  it('refuses variables 50,000 levels deep with 400', async () => {
    const client = api.newProject();
    const deep = `{"v":${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}}`;
    const res = await graphql(client, 'query Deep($v: JSON) { ValueSetExpand(valueSet: $v) { id } }', deep);
    expectRefused(res, /variables are nested more than 100 levels deep/);
  });
});

describe('document size (GRAPHQL_MAX_TOKENS)', () => {
  it('refuses a query of more than 10,000 tokens with 400', async () => {
    const client = api.newProject();
    const query = `{ ${'__typename '.repeat(10_000)}}`;
    expectRefused(await graphql(client, query), /more than 10000 tokens/);
  });

  it('runs a query of 10,000 tokens', async () => {
    const client = api.newProject();
    // `{`, 3,332 times `aN : __typename`, twice `__typename`, `}`: 10,000 tokens.
    const aliases = Array.from({ length: 3332 }, (_, i) => `a${i}: __typename`);
    const res = await graphql(client, `{ ${aliases.join(' ')} __typename __typename }`);
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(res.body.data.a3331).toBe('Query');
  });
});
