import { describe, expect, it } from 'vitest';
import { nicknameSearchParameter, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from './helpers.js';

/**
 * `GET /metadata` stays public; with a project's bearer token the CapabilityStatement also lists
 * that project's own SearchParameters under their base types.
 */

const api = await useTestServer();

type Json = any;

function searchParamsOf(statement: Json, type: string): Json[] {
  return statement.rest[0].resource.find((resource: Json) => resource.type === type).searchParam;
}

async function metadataOf(client: ProjectClient): Promise<Json> {
  const res = await client.get('/metadata');
  expect(res.status, res.text).toBe(200);
  expect(res.body.resourceType).toBe('CapabilityStatement');
  return res.body;
}

async function anonymousMetadata(): Promise<Json> {
  const res = await api.raw('/fhir/R4/metadata');
  expect(res.status).toBe(200);
  return res.json();
}

const shoeSize = (code: string) => ({
  resourceType: 'SearchParameter',
  url: `http://example.org/SearchParameter/${code}`,
  name: code,
  status: 'active',
  description: 'Shoe size of a patient or practitioner',
  code,
  base: ['Patient', 'Practitioner'],
  type: 'number',
  expression: "Patient.extension('http://example.org/shoe-size').value | Practitioner.extension('http://example.org/shoe-size').value",
});

describe('the CapabilityStatement of a project', () => {
  it("lists the project's own search parameters under each base type", async () => {
    const p = api.newProject();
    const code = `nick${Date.now()}`;
    await create(p, nicknameSearchParameter(code));
    await create(p, shoeSize('shoe-size'));
    const statement = await metadataOf(p);
    const patient = searchParamsOf(statement, 'Patient');
    expect(patient).toContainEqual({
      name: code,
      definition: `http://example.org/SearchParameter/${code}`,
      type: 'string',
      documentation: 'A nickname',
    });
    expect(patient).toContainEqual({
      name: 'shoe-size',
      definition: 'http://example.org/SearchParameter/shoe-size',
      type: 'number',
      documentation: 'Shoe size of a patient or practitioner',
    });
    expect(searchParamsOf(statement, 'Practitioner').map((param: Json) => param.name)).toContain('shoe-size');
    expect(searchParamsOf(statement, 'Observation').map((param: Json) => param.name)).not.toContain('shoe-size');
    // The built-in ones are still there, once.
    expect(patient.filter((param: Json) => param.name === 'gender')).toHaveLength(1);
    // Exactly what the project's searches accept.
    expect((await p.get(`/Patient?${code}=x`)).status).toBe(200);
  });

  it('is not shown to an anonymous request, which still gets the statement', async () => {
    const p = api.newProject();
    await create(p, shoeSize('shoe-size'));
    const statement = await anonymousMetadata();
    expect(searchParamsOf(statement, 'Patient').map((param: Json) => param.name)).not.toContain('shoe-size');
    expect(searchParamsOf(statement, 'Patient').map((param: Json) => param.name)).toContain('gender');
  });

  it("is not shown to another project's token", async () => {
    const owner = api.newProject();
    const other = api.newProject();
    await create(owner, shoeSize('shoe-size'));
    expect(searchParamsOf(await metadataOf(owner), 'Patient').map((param: Json) => param.name)).toContain('shoe-size');
    const statement = await metadataOf(other);
    expect(searchParamsOf(statement, 'Patient').map((param: Json) => param.name)).not.toContain('shoe-size');
    expect(statement).toEqual({ ...(await anonymousMetadata()), date: statement.date });
  });

  it('follows updates and deletes of the SearchParameter', async () => {
    const p = api.newProject();
    const id = await create(p, shoeSize('shoe-size'));
    expect(searchParamsOf(await metadataOf(p), 'Practitioner').map((param: Json) => param.name)).toContain('shoe-size');
    const updated = await p.put(`/SearchParameter/${id}`, { ...shoeSize('shoe-size'), id, base: ['Patient'], expression: "Patient.extension('http://example.org/shoe-size').value" });
    expect(updated.status, updated.text).toBe(200);
    const statement = await metadataOf(p);
    expect(searchParamsOf(statement, 'Practitioner').map((param: Json) => param.name)).not.toContain('shoe-size');
    expect(searchParamsOf(statement, 'Patient').map((param: Json) => param.name)).toContain('shoe-size');
    expect((await p.delete(`/SearchParameter/${id}`)).status).toBe(200);
    expect(searchParamsOf(await metadataOf(p), 'Patient').map((param: Json) => param.name)).not.toContain('shoe-size');
  });

  it('a retired SearchParameter is not listed', async () => {
    const p = api.newProject();
    await create(p, { ...shoeSize('shoe-size'), status: 'retired' });
    expect(searchParamsOf(await metadataOf(p), 'Patient').map((param: Json) => param.name)).not.toContain('shoe-size');
  });

  it('an invalid bearer token is 401, as on every other route', async () => {
    const res = await api.raw('/fhir/R4/metadata', { headers: { Authorization: 'Bearer not-a-token' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
    expect((await res.json()).issue[0].code).toBe('login');
  });
});
