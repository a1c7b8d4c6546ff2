import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * A request carrying more than one Authorization header (or several credentials in one, comma
 * separated) gets the same answer on every route: 400 with an OperationOutcome `invalid` saying the
 * header must appear once (RFC 6750 3.1 `invalid_request`), whichever credential is valid. Node
 * keeps only the first of repeated Authorization headers in its parsed headers, so these requests
 * are sent with raw header lists (node:http), as a client or proxy could.
 */

const api = await useTestServer();

type Json = any;

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Json;
  text: string;
}

/** Sends `headers` as given, repeated names included (the rawHeaders form: name, value, name, value...). */
function send(method: string, path: string, headers: string[], body?: string): Promise<RawResponse> {
  const url = new URL(`${api.url}${path}`);
  return new Promise((resolve, reject) => {
    // Given as a list, headers are sent exactly as listed: Host too must be in it.
    const list = ['Host', url.host, ...headers];
    const req = request({ method, hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, headers: list }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: Json;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, body: parsed, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Two Authorization headers: the client's own valid token, then `second` (the same by default). */
async function twice(client: ProjectClient, second?: string): Promise<string[]> {
  const token = `Bearer ${await client.token()}`;
  return ['Authorization', token, 'Authorization', second ?? token];
}

/** One Authorization header holding two credentials, as a proxy joining repeated headers writes it. */
async function joined(client: ProjectClient): Promise<string[]> {
  const token = `Bearer ${await client.token()}`;
  return ['Authorization', `${token}, ${token}`];
}

function expectRepeatedOutcome(outcome: Json): void {
  expect(outcome.resourceType).toBe('OperationOutcome');
  expect(outcome.issue).toHaveLength(1);
  expect(outcome.issue[0].severity).toBe('error');
  expect(outcome.issue[0].code).toBe('invalid');
  expect(outcome.issue[0].details.text).toContain('Authorization header must appear once');
}

/** A REST answer: 400, the OperationOutcome, and the RFC 6750 challenge. */
function expectRestRefusal(res: RawResponse): void {
  expect(res.status, res.text).toBe(400);
  expectRepeatedOutcome(res.body);
  expect(String(res.headers['www-authenticate'])).toContain('error="invalid_request"');
}

/** A GraphQL answer: 400, the OperationOutcome in the error's extensions (as for every GraphQL authentication error). */
function expectGraphQLRefusal(res: RawResponse): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body.data).toBeUndefined();
  expect(res.body.errors).toHaveLength(1);
  expectRepeatedOutcome(res.body.errors[0].extensions.resource);
}

const JSON_BODY = ['Content-Type', 'application/json'];
const query = (text: string) => JSON.stringify({ query: text });

describe('repeated Authorization headers', () => {
  it('REST: two Authorization headers with the same valid token are 400', async () => {
    const p = api.newProject();
    expectRestRefusal(await send('GET', '/fhir/R4/Patient', await twice(p)));
  });

  it('REST: a valid token followed by another header is 400, not an answer for either', async () => {
    const p = api.newProject();
    expectRestRefusal(await send('GET', '/fhir/R4/Patient', await twice(p, 'Bearer not-a-token')));
  });

  it('REST: one header holding two comma-separated credentials is 400', async () => {
    const p = api.newProject();
    expectRestRefusal(await send('GET', '/fhir/R4/Patient', await joined(p)));
  });

  it('REST: a write with two Authorization headers is 400 and writes nothing', async () => {
    const p = api.newProject();
    const body = JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Twice' }] });
    expectRestRefusal(await send('POST', '/fhir/R4/Patient', [...(await twice(p)), 'Content-Type', 'application/fhir+json'], body));
    const search = await p.get('/Patient?name=twice');
    expect(search.body.entry ?? []).toEqual([]);
  });

  it('/fhir/R4/metadata with two Authorization headers is 400', async () => {
    const p = api.newProject();
    expectRestRefusal(await send('GET', '/fhir/R4/metadata', await twice(p)));
  });

  it('/oauth2/userinfo with two Authorization headers is 400', async () => {
    const p = api.newProject();
    expectRestRefusal(await send('GET', '/oauth2/userinfo', await twice(p)));
  });

  it('POST /graphql with two Authorization headers is 400 (not answered with the first)', async () => {
    const p = api.newProject();
    expectGraphQLRefusal(await send('POST', '/graphql', [...(await twice(p)), ...JSON_BODY], query('{ PatientList { id } }')));
  });

  it('POST /fhir/R4/$graphql with two Authorization headers is 400', async () => {
    const p = api.newProject();
    expectGraphQLRefusal(await send('POST', '/fhir/R4/$graphql', [...(await twice(p)), ...JSON_BODY], query('{ PatientList { id } }')));
  });

  it('GraphQL: a valid token followed by an invalid one is 400, as on REST', async () => {
    const p = api.newProject();
    expectGraphQLRefusal(await send('POST', '/fhir/R4/$graphql', [...(await twice(p, 'Bearer not-a-token')), ...JSON_BODY], query('{ PatientList { id } }')));
  });

  it('GraphQL: one header holding two comma-separated credentials is 400', async () => {
    const p = api.newProject();
    expectGraphQLRefusal(await send('POST', '/graphql', [...(await joined(p)), ...JSON_BODY], query('{ PatientList { id } }')));
  });

  it('GET /graphql?query= with two Authorization headers is 400', async () => {
    const p = api.newProject();
    const path = `/graphql?query=${encodeURIComponent('{ PatientList { id } }')}`;
    expectGraphQLRefusal(await send('GET', path, [...(await twice(p)), 'Accept', 'application/json']));
  });

  it('instance-level $graphql with two Authorization headers is 400', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Instance' }] });
    expect(created.status, created.text).toBe(201);
    const path = `/fhir/R4/Patient/${created.body.id}/$graphql`;
    expectGraphQLRefusal(await send('POST', path, [...(await twice(p)), ...JSON_BODY], query('{ id }')));
  });

  it('a prepared GraphQL query (run often before) with two Authorization headers is 400', async () => {
    const p = api.newProject();
    const text = query('{ PatientList(name: "prepared-twice") { id } }');
    const single = ['Authorization', `Bearer ${await p.token()}`, ...JSON_BODY];
    // Compiled on its second run, prepared from its third (README, GraphQL speed).
    for (let i = 0; i < 4; i++) {
      const res = await send('POST', '/fhir/R4/$graphql', single, text);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ data: { PatientList: [] } });
    }
    expectGraphQLRefusal(await send('POST', '/fhir/R4/$graphql', [...(await twice(p)), ...JSON_BODY], text));
  });

  it('POST /oauth2/token with two Authorization headers is 400 invalid_request', async () => {
    const p = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(p);
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    const res = await send(
      'POST',
      '/oauth2/token',
      ['Authorization', basic, 'Authorization', basic, 'Content-Type', 'application/x-www-form-urlencoded'],
      'grant_type=client_credentials',
    );
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.error_description).toContain('Authorization header must appear once');
  });

  it('one Authorization header still works on REST and GraphQL', async () => {
    const p = api.newProject();
    const single = ['Authorization', `Bearer ${await p.token()}`];
    expect((await send('GET', '/fhir/R4/Patient', single)).status).toBe(200);
    const graphql = await send('POST', '/graphql', [...single, ...JSON_BODY], query('{ PatientList { id } }'));
    expect(graphql.status, graphql.text).toBe(200);
    expect(graphql.body).toEqual({ data: { PatientList: [] } });
  });
});
