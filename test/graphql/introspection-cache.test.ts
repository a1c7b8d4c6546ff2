import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { data, graphql } from './resource-helpers.js';

/**
 * Introspection answers are kept per schema, document, operation and variables
 * (src/graphql/introspection-cache.ts): each repeat must still get the answer to its own request.
 */
const api = await useTestServer();

const TYPE_QUERY = 'query ($name: String!) { __type(name: $name) { name fields { name } } }';

describe('kept introspection answers', () => {
  it('answers each variable value with its own type, also when repeated', async () => {
    const client = api.newProject();
    for (let round = 0; round < 3; round++) {
      expect((await data(api, client, TYPE_QUERY, { name: 'Patient' })).__type.name).toBe('Patient');
      expect((await data(api, client, TYPE_QUERY, { name: 'Observation' })).__type.name).toBe('Observation');
    }
  });

  it('answers each operation of a document with its own result', async () => {
    const client = api.newProject();
    const document = 'query A { __type(name: "Patient") { name } } query B { __type(name: "Encounter") { name } }';
    for (let round = 0; round < 3; round++) {
      for (const [operationName, expected] of [['A', 'Patient'], ['B', 'Encounter']] as const) {
        const res = await api.raw('/fhir/R4/$graphql', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
          body: JSON.stringify({ query: document, operationName }),
        });
        expect(((await res.json()) as { data: { __type: { name: string } } }).data.__type.name).toBe(expected);
      }
    }
  });

  it('answers from the schema of the endpoint asked: the instance level has its own', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', { resourceType: 'Patient' });
    const query = '{ __schema { queryType { name } } }';
    const instance = async () => {
      const res = await api.raw(`/fhir/R4/Patient/${created.body.id}/$graphql`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
        body: JSON.stringify({ query }),
      });
      return ((await res.json()) as { data: { __schema: { queryType: { name: string } } } }).data.__schema.queryType.name;
    };
    for (let round = 0; round < 3; round++) {
      expect((await data(api, client, query)).__schema.queryType.name).toBe('Query');
      expect(await instance()).toBe('Patient');
    }
  });

  it('does not keep an answer with errors', async () => {
    const client = api.newProject();
    for (let round = 0; round < 3; round++) {
      const res = await graphql(api, client, TYPE_QUERY, {});
      expect(res.body.errors?.length).toBeGreaterThan(0);
    }
    expect((await data(api, client, TYPE_QUERY, { name: 'Patient' })).__type.name).toBe('Patient');
  });
});
