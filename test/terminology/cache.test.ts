import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { animals, out, params, SYSTEM, withAnimals, withValueSet } from './fixtures.js';

/**
 * Code systems and value sets are answered from memory (src/terminology/cache.ts): every change
 * must be visible to the very next request, on this server and (PostgreSQL) on another server of
 * the same database.
 */
const api = await useTestServer();
const other = process.env.DATABASE_URL ? await useTestServer() : undefined;
const system = encodeURIComponent(SYSTEM);
const VS = 'http://flint.test/ValueSet/cached';

/** The animals code system with another display for `cat`. */
function withCatDisplay(display: string): typeof animals {
  const copy = structuredClone(animals) as any;
  copy.concept[0].concept[0].concept[1].display = display;
  return copy;
}

const lookupDisplay = async (client: ProjectClient, code: string): Promise<unknown> => {
  const res = await client.get(`/CodeSystem/$lookup?system=${system}&code=${code}`);
  return res.status === 200 ? out(res.body, 'display')[0].valueString : res.status;
};

const validates = async (client: ProjectClient, code: string): Promise<boolean> => {
  const res = await client.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=${system}&code=${code}`);
  return out(res.body, 'result')[0].valueBoolean;
};

describe('terminology answered from memory stays current', () => {
  it('$lookup gives the new display right after the CodeSystem is updated', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    expect(await lookupDisplay(client, 'cat')).toBe('Cat');
    const renamed = withCatDisplay('House cat');
    expect((await client.put(`/CodeSystem/${id}`, { ...renamed, id })).status).toBe(200);
    expect(await lookupDisplay(client, 'cat')).toBe('House cat');
  });

  it('$lookup finds concepts added by CodeSystem/$import', async () => {
    const client = api.newProject();
    await withAnimals(client);
    expect(await lookupDisplay(client, 'wolf')).toBe(404);
    const res = await client.post('/CodeSystem/$import', params({ name: 'system', valueUri: SYSTEM }, { name: 'concept', valueCoding: { code: 'wolf', display: 'Wolf' } }));
    expect(res.status, res.text).toBe(200);
    expect(await lookupDisplay(client, 'wolf')).toBe('Wolf');
  });

  it('$lookup gives 404 once the CodeSystem is deleted', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    expect(await lookupDisplay(client, 'dog')).toBe('Dog');
    expect((await client.delete(`/CodeSystem/${id}`)).status).toBe(200);
    expect(await lookupDisplay(client, 'dog')).toBe(404);
  });

  it('$validate-code follows an update of the ValueSet', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const id = await withValueSet(client, VS, { include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    expect(await validates(client, 'cat')).toBe(false);
    const updated = await client.put(`/ValueSet/${id}`, {
      resourceType: 'ValueSet',
      id,
      url: VS,
      status: 'active',
      compose: { include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'cat' }] }] },
    });
    expect(updated.status).toBe(200);
    expect(await validates(client, 'cat')).toBe(true);
  });

  it('$expand with is-a includes a concept added under the code by $import', async () => {
    const client = api.newProject();
    await withAnimals(client);
    await withValueSet(client, VS, { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const before = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&excludeNested=true`);
    expect(before.body.expansion.total).toBe(4);
    const imported = await client.post(
      '/CodeSystem/$import',
      params(
        { name: 'system', valueUri: SYSTEM },
        { name: 'concept', valueCoding: { code: 'wolf', display: 'Wolf' } },
        { name: 'property', part: [{ name: 'code', valueCode: 'wolf' }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: 'dog' }] },
      ),
    );
    expect(imported.status, imported.text).toBe(200);
    const after = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&excludeNested=true`);
    expect(after.body.expansion.total).toBe(5);
    expect(after.body.expansion.contains.map((c: any) => c.code)).toContain('wolf');
  });

  it.runIf(other)('another server of the same PostgreSQL database sees a change on its next request', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    await withValueSet(client, VS, { include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    const elsewhere = projectClient(other!.fhir, client.projectId, client.token);
    expect(await lookupDisplay(elsewhere, 'cat')).toBe('Cat');
    expect(await validates(elsewhere, 'cat')).toBe(false);
    const renamed = withCatDisplay('House cat');
    expect((await client.put(`/CodeSystem/${id}`, { ...renamed, id })).status).toBe(200);
    expect(await lookupDisplay(elsewhere, 'cat')).toBe('House cat');
    const vs = await client.get(`/ValueSet?url=${encodeURIComponent(VS)}`);
    const vsId = vs.body.entry[0].resource.id;
    const updated = await client.put(`/ValueSet/${vsId}`, {
      resourceType: 'ValueSet',
      id: vsId,
      url: VS,
      status: 'active',
      compose: { include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'cat' }] }] },
    });
    expect(updated.status).toBe(200);
    expect(await validates(elsewhere, 'cat')).toBe(true);
  });
});
