import { expect } from 'vitest';
import type { ProjectClient, TestServer } from '../helpers/server.js';

type Json = any;

export interface GraphQLResponse {
  status: number;
  body: { data?: Json; errors?: { message: string; path?: (string | number)[]; extensions?: { resource?: Json } }[] };
}

/** The two GraphQL endpoints: the FHIR convention and the plain one. */
export const ENDPOINTS = ['/fhir/R4/$graphql', '/graphql'] as const;

/** POST a query as `client` (bearer token) to one of the GraphQL endpoints. */
export async function graphql(
  api: TestServer,
  client: ProjectClient,
  query: string,
  variables?: Record<string, unknown>,
  endpoint: (typeof ENDPOINTS)[number] = '/fhir/R4/$graphql',
): Promise<GraphQLResponse> {
  const res = await api.raw(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...(await client.authHeaders()) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as GraphQLResponse['body'] };
}

/** The data of a query that must succeed (no errors). */
export async function data(api: TestServer, client: ProjectClient, query: string, variables?: Record<string, unknown>): Promise<Json> {
  const res = await graphql(api, client, query, variables);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data;
}

/** The one error of a response: its OperationOutcome's first issue and the error's path. */
export function onlyError(res: GraphQLResponse): { code: string; text: string; path: (string | number)[] | undefined; outcome: Json } {
  expect(res.body.errors, JSON.stringify(res.body)).toHaveLength(1);
  const error = res.body.errors![0];
  const outcome = error.extensions?.resource;
  expect(outcome?.resourceType, JSON.stringify(error)).toBe('OperationOutcome');
  return { code: outcome.issue[0].code, text: outcome.issue[0].details?.text ?? '', path: error.path, outcome };
}

/** Creates a resource over REST and returns it (asserts 201). */
export async function create(client: ProjectClient, resource: Json): Promise<Json> {
  const res = await client.post(`/${resource.resourceType}`, resource);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export const observation = (subject: string, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { text: 'heart rate' },
  subject: { reference: subject },
  ...extra,
});

/** A GraphQL answer as the client gets it: status and the exact text. */
export interface GraphQLAnswer {
  status: number;
  text: string;
}

export async function postGraphQL(api: TestServer, client: ProjectClient, path: string, query: string, variables?: Record<string, unknown>): Promise<GraphQLAnswer> {
  const res = await api.raw(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json', ...(await client.authHeaders()) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * The same request three times: a query runs through the standard executor first, compiled
 * (graphql-jit) on its second run and as a prepared operation from its third (src/graphql/compiled.ts,
 * prepared.ts). All three answers must be the same, byte for byte; the first is returned, parsed.
 */
export async function everyWay(api: TestServer, client: ProjectClient, query: string, variables?: Record<string, unknown>, path = '/fhir/R4/$graphql') {
  const standard = await postGraphQL(api, client, path, query, variables);
  for (let run = 0; run < 2; run++) expect(await postGraphQL(api, client, path, query, variables)).toEqual(standard);
  return JSON.parse(standard.text) as { data?: Json; errors?: Json[] };
}
