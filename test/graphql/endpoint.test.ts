import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { SERVER_VERSION } from '../../src/fhir/software.js';
import { errors } from '../../src/fhir/outcome.js';
import type { RequestContext } from '../../src/operations/context.js';
import { createGraphQLHandler } from '../../src/graphql/yoga.js';
import { stubContext, type LogLine, type StubOptions } from './stub-context.js';

const BASE = 'http://localhost:8080';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

function setup(options: StubOptions = {}, getContext?: (request: Request) => Promise<RequestContext>) {
  const { context, logs } = stubContext(options);
  const serverLogs: LogLine[] = [];
  const serverLog = pino({ level: 'info' }, { write: (line: string) => void serverLogs.push(JSON.parse(line) as LogLine) });
  const getContextSpy = vi.fn(getContext ?? (async () => context));
  const handler = createGraphQLHandler({ getContext: getContextSpy, log: serverLog, config: loadConfig({}) });
  const post = (query: string, variables?: Record<string, unknown>, path = '/graphql', accept = 'application/json') =>
    handler(
      new Request(`${BASE}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: accept },
        body: JSON.stringify({ query, variables }),
      }),
    );
  return { handler, post, logs, serverLogs, getContext: getContextSpy };
}

describe('GraphQL endpoint', () => {
  it('answers health with the database status and version', async () => {
    const { post, getContext } = setup({ healthy: true });
    const response = await post('{ health { ok database version } }');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({
      data: { health: { ok: true, database: 'pglite', version: SERVER_VERSION } },
    });
    expect(getContext).toHaveBeenCalledTimes(1);
  });

  it('reports an unhealthy database as ok: false', async () => {
    const { post } = setup({ healthy: false });
    const response = await post('{ health { ok database } }');
    expect(await response.json()).toEqual({ data: { health: { ok: false, database: 'pglite' } } });
  });

  it('serves the same schema at /fhir/R4/$graphql, by POST and by GET', async () => {
    const { post, handler } = setup();
    const viaPost = await post('{ health { ok } }', undefined, '/fhir/R4/$graphql');
    expect(viaPost.status).toBe(200);
    expect(await viaPost.json()).toEqual({ data: { health: { ok: true } } });

    const query = encodeURIComponent('{ health { database } }');
    const viaGet = await handler(new Request(`${BASE}/fhir/R4/$graphql?query=${query}`));
    expect(viaGet.status).toBe(200);
    expect(await viaGet.json()).toEqual({ data: { health: { database: 'pglite' } } });
  });

  it('answers 404 on any other path', async () => {
    const { post } = setup();
    expect((await post('{ health { ok } }', undefined, '/fhir/R4/graphql')).status).toBe(404);
  });

  it('returns a resource from the repository as FHIR JSON', async () => {
    const patient = { resourceType: 'Patient', id: '123', name: [{ family: 'Chalmers', given: ['Peter'] }] };
    const readResource = vi.fn(async () => patient);
    const { post } = setup({ readResource });
    const response = await post('query Read($id: ID!) { resource(resourceType: "Patient", id: $id) }', { id: '123' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { resource: patient } });
    expect(readResource).toHaveBeenCalledWith('Patient', '123');
  });

  it('reports a missing resource with its OperationOutcome in extensions.resource', async () => {
    const { post, logs, serverLogs } = setup({
      readResource: async (type, id) => Promise.reject(errors.notFound(`${type}/${id} not found`)),
    });
    const response = await post('{ resource(resourceType: "Patient", id: "missing") }');
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.data).toEqual({ resource: null });
    expect(body.errors).toEqual([
      {
        message: 'Patient/missing not found',
        locations: [{ line: 1, column: 3 }],
        path: ['resource'],
        extensions: {
          resource: {
            resourceType: 'OperationOutcome',
            issue: [{ severity: 'error', code: 'not-found', details: { text: 'Patient/missing not found' } }],
          },
        },
      },
    ]);
    // An expected error is the client's business, not the server log's.
    expect([...logs, ...serverLogs].filter((line) => line.level === 50)).toEqual([]);
  });

  it('masks an unexpected error and logs its cause with the request logger', async () => {
    const { post, logs, serverLogs } = setup({
      readResource: async () => Promise.reject(new Error('connection reset by peer')),
    });
    const response = await post('{ resource(resourceType: "Patient", id: "1") }');
    const body = await response.json();
    expect(body.data).toEqual({ resource: null });
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0]).toMatchObject({ message: 'Unexpected error.', path: ['resource'] });
    expect(JSON.stringify(body)).not.toContain('connection reset');

    const logged = logs.filter((line) => line.msg === 'GraphQL resolver failed');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 50, path: 'resource', err: { message: 'connection reset by peer' } });
    expect(serverLogs.filter((line) => line.level === 50)).toEqual([]); // logged once, with the request's logger
  });

  it('answers a failed authentication with its status, header and OperationOutcome', async () => {
    const { post, serverLogs } = setup({}, async () => Promise.reject(errors.unauthorized('Missing bearer token')));
    const response = await post('{ health { ok } }', undefined, '/graphql', GRAPHQL_RESPONSE);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    const body = await response.json();
    expect(body).toEqual({
      errors: [
        {
          message: 'Missing bearer token',
          extensions: {
            resource: {
              resourceType: 'OperationOutcome',
              issue: [{ severity: 'error', code: 'login', details: { text: 'Missing bearer token' } }],
            },
          },
        },
      ],
    });
    expect(serverLogs.filter((line) => line.level === 50)).toEqual([]);
  });

  it('masks an unexpected failure while building the context', async () => {
    const { post, serverLogs } = setup({}, async () => Promise.reject(new Error('secret pool exhausted')));
    const response = await post('{ health { ok } }', undefined, '/graphql', GRAPHQL_RESPONSE);
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({ errors: [{ message: 'Unexpected error.' }] });
    expect(text).not.toContain('secret pool');
    expect(serverLogs).toContainEqual(
      expect.objectContaining({ level: 50, err: expect.objectContaining({ message: 'secret pool exhausted' }) }),
    );
  });

  it('serves GraphiQL to a browser (GET, Accept: text/html) at both paths', async () => {
    const { handler, getContext } = setup();
    for (const path of ['/graphql', '/fhir/R4/$graphql']) {
      const response = await handler(
        new Request(`${BASE}${path}`, { headers: { Accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' } }),
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await response.text();
      expect(html).toContain('<title>Flint GraphiQL</title>');
      expect(html).toContain(JSON.stringify(path).slice(1, -1));
    }
    expect(getContext).not.toHaveBeenCalled();
  });

  it('answers an invalid query with 400 and the validation errors', async () => {
    const { post, getContext } = setup();
    const response = await post('{ health { nope } }', undefined, '/graphql', GRAPHQL_RESPONSE);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      errors: [
        {
          message: 'Cannot query field "nope" on type "Health".',
          locations: [{ line: 1, column: 12 }],
          extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        },
      ],
    });
    expect(getContext).not.toHaveBeenCalled();
  });

  it('answers a syntax error and a missing query with 400', async () => {
    const { post, handler } = setup();
    const syntax = await post('{ health { ok }', undefined, '/graphql', GRAPHQL_RESPONSE);
    expect(syntax.status).toBe(400);
    expect((await syntax.json()).errors[0].message).toMatch(/^Syntax Error/);

    const missing = await handler(
      new Request(`${BASE}/graphql`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: GRAPHQL_RESPONSE },
        body: JSON.stringify({ variables: {} }),
      }),
    );
    expect(missing.status).toBe(400);
    expect((await missing.json()).errors[0].message).toBe('Must provide query string.');
  });

  // GraphQL over HTTP, "application/json": a client that accepts only the legacy media type gets
  // 200 for request errors too; the errors are in the body all the same.
  it('keeps 200 for request errors when the client accepts only application/json', async () => {
    const { post } = setup();
    const response = await post('{ health { nope } }', undefined, '/graphql', 'application/json');
    expect(response.status).toBe(200);
    expect((await response.json()).errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });
});
