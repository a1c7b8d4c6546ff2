import { TrieRouter } from 'hono/router/trie-router';
import { describe, expect, it } from 'vitest';
import { FhirRouter } from '../../src/router/router.js';
import { fhirRoutes } from '../../src/router/routes.js';
import type { FhirRoute } from '../../src/router/types.js';
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

describe('remembered shapes against the route table', () => {
  const words = ['Patient', 'Bot', 'OperationDefinition', 'metadata', '$versions', '$export-status', '$csv', '$execute', '$everything', '_history', '_search', 'Patient-1.ndjson', 'abc', '123', 'a.b', '', 'a'.repeat(65)];

  /** Every path of up to three segments of `words`, and four-segment ones of a few. */
  function paths(): string[] {
    const found = [...words];
    for (const a of words) for (const b of words) found.push(`${a}/${b}`);
    for (const a of words) for (const b of words) for (const c of words) found.push(`${a}/${b}/${c}`);
    for (const d of words) found.push(`Patient/123/_history/${d}`, `$export-status/123/${d}/x`);
    return found;
  }

  it('routes every path, seen before or not, as the trie router does', () => {
    const router = new FhirRouter(fhirRoutes);
    const trie = new TrieRouter<FhirRoute>();
    for (const route of router.routes) trie.add(route.method, `/${route.path}`, route);
    const differing: string[] = [];
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      for (const path of [...paths(), ...paths()]) {
        const [matches] = trie.match(method, `/${path}`) as [[FhirRoute, Record<string, string>][]];
        const expected = matches[0] ? { route: matches[0][0], params: matches[0][1] } : undefined;
        const found = router.match(method, path);
        if (found?.route !== expected?.route || JSON.stringify(found?.params) !== JSON.stringify(expected?.params)) differing.push(`${method} ${path}`);
      }
    }
    expect(differing).toEqual([]);
  });
});
