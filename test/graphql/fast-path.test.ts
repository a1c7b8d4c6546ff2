import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { errors } from '../../src/fhir/outcome.js';
import type { RequestContext } from '../../src/operations/context.js';
import { regularMediaType } from '../../src/graphql/http-fast-path.js';
import { createGraphQLHandler, type GraphQLHandler } from '../../src/graphql/yoga.js';
import { stubContext } from './stub-context.js';

// The HTTP layer answers most POSTs through GraphQLHandler.handle, which skips yoga's HTTP adapter
// (src/graphql/http-fast-path.ts). Whatever the request, the client must get what yoga itself
// (the handler called as a fetch handler) answers: same status, content type and body.

const BASE = 'http://localhost:8080';

function setup(getContext?: () => Promise<RequestContext>): GraphQLHandler {
  const { context } = stubContext({
    readResource: async (type, id) => {
      if (id === 'missing') throw errors.notFound(`${type}/${id} not found`);
      if (id === 'broken') throw new Error('disk on fire');
      return { resourceType: type, id, name: [{ family: 'Chalmers' }] };
    },
  });
  return createGraphQLHandler({
    getContext: getContext ?? (async () => context),
    log: pino({ level: 'silent' }),
    config: loadConfig({}),
  });
}

interface Case {
  name: string;
  body: string;
  headers?: Record<string, string>;
}

const query = (text: string, extra: Record<string, unknown> = {}) => JSON.stringify({ query: text, ...extra });

const CASES: Case[] = [
  { name: 'a query without Accept', body: query('{ health { ok database } }') },
  { name: 'Accept: application/json', body: query('{ health { ok } }'), headers: { Accept: 'application/json' } },
  { name: 'Accept: graphql-response+json', body: query('{ health { ok } }'), headers: { Accept: 'application/graphql-response+json' } },
  { name: 'Accept: */*', body: query('{ health { ok } }'), headers: { Accept: '*/*' } },
  { name: 'Accept with both, json first', body: query('{ health { ok } }'), headers: { Accept: 'application/json, application/graphql-response+json' } },
  { name: 'Accept with q values and charset', body: query('{ health { ok } }'), headers: { Accept: 'application/graphql-response+json;charset=utf-8;q=1, application/json;q=0.9' } },
  { name: 'Accept: application/*', body: query('{ health { ok } }'), headers: { Accept: 'application/*' } },
  { name: 'Accept with another charset', body: query('{ health { ok } }'), headers: { Accept: 'application/json; charset=latin1' } },
  { name: 'Accept: text/event-stream', body: query('{ health { ok } }'), headers: { Accept: 'text/event-stream' } },
  { name: 'Accept: text/html', body: query('{ health { ok } }'), headers: { Accept: 'text/html' } },
  { name: 'variables and operationName', body: query('query A($id: ID!) { resource(resourceType: "Patient", id: $id) } query B { health { ok } }', { variables: { id: '1' }, operationName: 'A' }) },
  { name: 'a field error with its OperationOutcome', body: query('{ resource(resourceType: "Patient", id: "missing") }') },
  { name: 'a masked unexpected error', body: query('{ resource(resourceType: "Patient", id: "broken") }') },
  { name: 'a validation error', body: query('{ health { nope } }'), headers: { Accept: 'application/graphql-response+json' } },
  { name: 'a validation error, json only', body: query('{ health { nope } }'), headers: { Accept: 'application/json' } },
  { name: 'a syntax error', body: query('{ health { ok }'), headers: { Accept: 'application/graphql-response+json' } },
  { name: 'a missing query', body: JSON.stringify({ variables: {} }), headers: { Accept: 'application/graphql-response+json' } },
  { name: 'a query that is not a string', body: JSON.stringify({ query: 1 }) },
  { name: 'variables that are not an object', body: JSON.stringify({ query: '{ health { ok } }', variables: 'x' }) },
  { name: 'an unknown parameter', body: JSON.stringify({ query: '{ health { ok } }', extra: 1 }) },
  { name: 'a missing variable', body: query('query ($id: ID!) { resource(resourceType: "Patient", id: $id) }'), headers: { Accept: 'application/graphql-response+json' } },
  { name: 'a batch', body: JSON.stringify([{ query: '{ health { ok } }' }]) },
  { name: 'invalid JSON', body: '{ "query": ' },
  { name: 'JSON null', body: 'null' },
  { name: 'a mutation', body: query('mutation { PatientDelete(id: "1") { id } }') },
  { name: 'another content type', body: '{ health { ok } }', headers: { 'Content-Type': 'application/graphql' } },
];

async function viaYoga(handler: GraphQLHandler, request: Case) {
  const response = await handler(
    new Request(`${BASE}/fhir/R4/$graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...request.headers },
      body: request.body,
    }),
  );
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
}

async function viaHandle(handler: GraphQLHandler, request: Case) {
  const response = await handler.handle({
    method: 'POST',
    url: `${BASE}/fhir/R4/$graphql`,
    headers: new Headers({ 'Content-Type': 'application/json', ...request.headers }),
    body: request.body,
    requestId: 'test-request',
  });
  return { status: response.status, type: response.headers['content-type'] ?? null, body: response.body ?? '' };
}

describe('the HTTP fast path', () => {
  // The schema is built once here: building it per case would make every case slow.
  const handler = setup();

  it.each(CASES)('answers $name as yoga does', async (request) => {
    expect(await viaHandle(handler, request)).toEqual(await viaYoga(handler, request));
  });

  // The third run of a query goes the prepared way (src/graphql/prepared.ts): compiled on the
  // second, answered without yoga from then on.
  it.each(CASES)('answers $name as yoga does when repeated', async (request) => {
    const repeated = setup();
    const expected = await viaYoga(repeated, request);
    for (let run = 0; run < 4; run++) expect(await viaHandle(repeated, request)).toEqual(expected);
  });

  it('sends the same headers for a prepared query', async () => {
    const repeated = setup();
    const request = { name: 'prepared', body: query('query ($id: ID!) { resource(resourceType: "Patient", id: $id) }', { variables: { id: '7' } }) };
    const answers = [];
    for (let run = 0; run < 4; run++) {
      answers.push(
        await repeated.handle({
          method: 'POST',
          url: `${BASE}/fhir/R4/$graphql`,
          headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
          body: request.body,
          requestId: 'test-request',
        }),
      );
    }
    expect(answers[0].status).toBe(200);
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    expect(repeated.prepared.size).toBe(1);
  });

  it('answers a query prepared at the system endpoint at the instance level as that level does', async () => {
    const repeated = setup();
    const ask = async (path: string) =>
      (await repeated.handle({ method: 'POST', url: `${BASE}${path}`, headers: { 'content-type': 'application/json' }, body: query('{ __typename }'), requestId: 'r' })).body;
    for (let run = 0; run < 3; run++) expect(await ask('/fhir/R4/$graphql')).toBe('{"data":{"__typename":"Query"}}');
    expect(repeated.prepared.size).toBe(1);
    expect(await ask('/fhir/R4/Patient/p1/$graphql')).toBe('{"data":{"__typename":"Patient"}}');
  });

  it('prepares no query whose page size comes from a variable (checked against the limits per request)', async () => {
    const repeated = setup();
    const body = query('query ($n: Int) { PatientList(_count: $n) { id } }', { variables: { n: 5 } });
    for (let run = 0; run < 3; run++) {
      await repeated.handle({ method: 'POST', url: `${BASE}/fhir/R4/$graphql`, headers: { 'content-type': 'application/json' }, body, requestId: 'r' });
    }
    expect(repeated.prepared.size).toBe(0);
  });

  it('answers a failed authentication as yoga does', async () => {
    const handler = setup(async () => Promise.reject(errors.unauthorized('Missing bearer token')));
    const request = { name: 'auth', body: query('{ health { ok } }') };
    const yoga = await viaYoga(handler, request);
    expect(yoga.status).toBe(401);
    expect(await viaHandle(handler, request)).toEqual(yoga);
  });

  it('answers an unexpected failure to build the context as yoga does', async () => {
    const handler = setup(async () => Promise.reject(new Error('pool exhausted')));
    const request = { name: 'context', body: query('{ health { ok } }'), headers: { Accept: 'application/graphql-response+json' } };
    const yoga = await viaYoga(handler, request);
    expect(yoga.status).toBe(500);
    expect(await viaHandle(handler, request)).toEqual(yoga);
  });
});

describe('the media type of the response', () => {
  it.each([
    [null, 'application/json'],
    ['*/*', 'application/json'],
    ['application/json', 'application/json'],
    ['application/graphql-response+json', 'application/graphql-response+json'],
    ['application/graphql-response+json, application/json', 'application/graphql-response+json'],
    ['application/json, application/graphql-response+json', 'application/json'],
    ['text/html, */*;q=0.8', 'application/json'],
    ['text/event-stream', undefined],
    ['application/json; charset=latin1', undefined],
  ])('for Accept %s is %s (yoga: the first acceptable type listed)', (accept, expected) => {
    expect(regularMediaType(accept)).toBe(expected);
  });
});
