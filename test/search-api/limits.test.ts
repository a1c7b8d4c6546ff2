import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { graphql, onlyError } from '../graphql/resource-helpers.js';

/**
 * The limits every search is parsed under (docs/search.md#limits), whichever way it comes: REST
 * (GET or a POST form), a Bundle entry or a GraphQL list field. A request over one is refused
 * with 400 naming the parameter, before any statement runs.
 */

const api = await useTestServer();

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

async function postSearch(path: string, form: string): Promise<{ status: number; body: any }> {
  const client = api.newProject();
  const res = await api.raw(`/fhir/R4${path}`, { method: 'POST', headers: { ...FORM, ...(await client.authHeaders()) }, body: form });
  return { status: res.status, body: await res.json() };
}

describe('search value length', () => {
  it('refuses a value longer than the limit with 400 too-long naming the parameter', async () => {
    const res = await postSearch('/Patient/_search', `name=${'a'.repeat(4097)}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('too-long');
    expect(res.body.issue[0].expression).toEqual(['name']);
    expect(res.body.issue[0].details.text).toContain('4096');
  });

  it('refuses one long value among the OR values of a parameter', async () => {
    const res = await api.newProject().get(`/Patient?family=short,${'b'.repeat(4097)}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['family']);
  });

  it('accepts a value at the limit', async () => {
    const res = await api.newProject().get(`/Patient?family=${'c'.repeat(4096)}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it('refuses a long value in a Bundle entry search as that entry', async () => {
    const client = api.newProject();
    const bundle = { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'GET', url: `Patient?name=${'d'.repeat(5000)}` } }] };
    const res = await client.post('', bundle);
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].response.status).toMatch(/^400/);
    expect(res.body.entry[0].response.outcome.issue[0].code).toBe('too-long');
  });

  it('refuses a long GraphQL list argument as REST does', async () => {
    const client = api.newProject();
    const error = onlyError(await graphql(api, client, `{ PatientList(name: "${'e'.repeat(5000)}") { id } }`));
    expect(error.code).toBe('too-long');
  });
});

describe('search parameter counts', () => {
  it('refuses more than 100 parameters with 400 too-costly', async () => {
    const query = Array.from({ length: 101 }, (_, i) => `name=n${i}`).join('&');
    const res = await api.newProject().get(`/Patient?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('too-costly');
    expect(res.body.issue[0].details.text).toContain('100');
  });

  it('refuses 10,000 parameters in a form body with 400, not a database error', async () => {
    const form = Array.from({ length: 10_000 }, () => 'name=x').join('&');
    const res = await postSearch('/Patient/_search', form);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('too-costly');
  });

  it('refuses more than 1000 OR values in one search, naming the parameter', async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `id${i}`).join(',');
    const res = await api.newProject().get(`/Patient?_id=${ids}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('too-costly');
    expect(res.body.issue[0].expression).toEqual(['_id']);
  });

  it('accepts 1000 OR values', async () => {
    const ids = Array.from({ length: 1000 }, (_, i) => `id${i}`).join(',');
    const res = await api.newProject().get(`/Patient?_id=${ids}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe('NUL in search values', () => {
  it('refuses NUL in a string value with 400 naming the parameter', async () => {
    const res = await api.newProject().get('/Patient?name=a%00b');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['name']);
  });

  it('refuses NUL in the code of a token value with 400', async () => {
    const res = await api.newProject().get('/Patient?identifier=x|%00');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['identifier']);
  });

  it('refuses NUL in a parameter name with 400', async () => {
    const res = await api.newProject().get('/Patient?na%00me=x');
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });
});
