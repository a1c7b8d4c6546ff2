import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

// The router remembers which route serves each shape of path (src/router/route-shapes.ts): a
// path read after another of nearly the same form must still reach its own route.

const api = await useTestServer();

/** A new project's client that has just read one of its Patients by id (the shape remembered). */
async function clientAfterARead(): Promise<ProjectClient> {
  const client = api.newProject();
  const created = await client.post('/Patient', patientBody());
  expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
  return client;
}

describe('routing of paths of one form', () => {
  it('serves a type’s history after a read, though both are two segments', async () => {
    const client = await clientAfterARead();
    const history = await client.get('/Patient/_history');
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ resourceType: 'Bundle', type: 'history' });
  });

  it('serves a built-in OperationDefinition by its own route after a read of another type', async () => {
    const client = await clientAfterARead();
    const definition = await client.get('/OperationDefinition/CodeSystem-lookup');
    expect(definition.status).toBe(200);
    expect(definition.body.code).toBe('lookup');
  });

  it('finds no route for an id over 64 characters after reads of ordinary ids', async () => {
    const client = await clientAfterARead();
    const tooLong = await client.get(`/Patient/${'a'.repeat(65)}`);
    expect(tooLong.status).toBe(404);
    expect(tooLong.body.issue[0].code).toBe('not-supported');
  });

  it('gives each read its own id when many reads share one form', async () => {
    const client = api.newProject();
    const ids: string[] = [];
    for (const family of ['Ames', 'Brook', 'Cole']) ids.push((await client.post('/Patient', patientBody({ name: [{ family }] }))).body.id);
    const families = [];
    for (const id of ids) families.push((await client.get(`/Patient/${id}?_elements=name`)).body.name[0].family);
    expect(families).toEqual(['Ames', 'Brook', 'Cole']);
  });
});
