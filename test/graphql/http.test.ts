import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

const api = await useTestServer();

async function graphql(path: string, client: ProjectClient, query: string) {
  const res = await api.raw(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
    body: JSON.stringify({ query }),
  });
  return { status: res.status, body: await res.json() };
}

describe('GraphQL over the running server', () => {
  it.each(['/graphql', '/fhir/R4/$graphql'])('reads a resource created through REST at %s', async (path) => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const res = await graphql(path, client, `{ resource(resourceType: "Patient", id: "${created.body.id}") }`);
    expect(res.status).toBe(200);
    expect(res.body.data.resource).toEqual(created.body);
  });

  it('hides resources of another project, with the OperationOutcome in extensions', async () => {
    const created = await api.newProject().post('/Patient', patientBody());
    const res = await graphql('/graphql', api.newProject(), `{ resource(resourceType: "Patient", id: "${created.body.id}") }`);
    expect(res.body.data.resource).toBeNull();
    expect(res.body.errors[0].extensions.resource.issue[0].code).toBe('not-found');
  });

  it('reports database health', async () => {
    const res = await graphql('/graphql', api.newProject(), '{ health { ok database } }');
    expect(res.body.data.health).toEqual({ ok: true, database: process.env.DATABASE_URL ? 'postgres' : 'pglite' });
  });
});
