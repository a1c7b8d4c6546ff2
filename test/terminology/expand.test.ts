import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { params, SYSTEM, withAnimals, withValueSet } from './fixtures.js';

const api = await useTestServer();
const VS = 'http://flint.test/ValueSet/expand';

async function setup(compose: unknown): Promise<{ client: ProjectClient; id: string }> {
  const client = api.newProject();
  await withAnimals(client);
  return { client, id: await withValueSet(client, VS, compose) };
}

const codes = (contains: any[] = []): string[] => contains.flatMap((c) => [c.code, ...codes(c.contains)]);
const url = encodeURIComponent(VS);

describe('ValueSet/$expand', () => {
  it('expands an is-a filter, nested by the hierarchy, returning the ValueSet itself', async () => {
    const { client } = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const res = await client.get(`/ValueSet/$expand?url=${url}`);
    expect(res.status).toBe(200);
    expect(res.body.resourceType).toBe('ValueSet');
    expect(res.body.expansion.total).toBe(4);
    expect(res.body.expansion.contains).toEqual([
      {
        system: SYSTEM,
        code: 'mammal',
        display: 'Mammal',
        contains: [
          { system: SYSTEM, code: 'dog', display: 'Dog', contains: [{ system: SYSTEM, code: 'puppy', display: 'Puppy' }] },
          { system: SYSTEM, code: 'cat', display: 'Cat' },
        ],
      },
    ]);
  });

  it('gives a flat list with excludeNested=true, and the same by POST', async () => {
    const { client } = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const get = await client.get(`/ValueSet/$expand?url=${url}&excludeNested=true`);
    expect(get.body.expansion.contains.map((c: any) => c.code)).toEqual(['mammal', 'dog', 'puppy', 'cat']);
    const post = await client.post('/ValueSet/$expand', params({ name: 'url', valueUri: VS }, { name: 'excludeNested', valueBoolean: true }));
    expect({ ...post.body.expansion, identifier: 0, timestamp: 0 }).toEqual({ ...get.body.expansion, identifier: 0, timestamp: 0 });
  });

  it('pages with offset and count, with the total', async () => {
    const { client } = await setup({ include: [{ system: SYSTEM }] });
    const page = await client.get(`/ValueSet/$expand?url=${url}&offset=2&count=3`);
    expect(page.body.expansion.total).toBe(10);
    expect(page.body.expansion.offset).toBe(2);
    expect(page.body.expansion.contains.map((c: any) => c.code)).toEqual(['dog', 'puppy', 'cat']);
    const past = await client.get(`/ValueSet/$expand?url=${url}&offset=50&count=3`);
    expect(past.body.expansion.total).toBe(10);
    expect(past.body.expansion.contains).toBeUndefined();
  });

  it('filters by text in code or display', async () => {
    const { client } = await setup({ include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$expand?url=${url}&filter=PA`);
    expect(codes(res.body.expansion.contains)).toEqual(['parrot']);
    expect(res.body.expansion.parameter).toEqual([{ name: 'filter', valueString: 'PA' }]);
  });

  it('flags abstract codes and honours excludes', async () => {
    const { client } = await setup({
      include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'animal' }] }],
      exclude: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'dog' }] }],
    });
    const res = await client.get(`/ValueSet/$expand?url=${url}&excludeNested=true`);
    expect(res.body.expansion.contains[0]).toEqual({ system: SYSTEM, code: 'animal', display: 'Animal', abstract: true });
    expect(codes(res.body.expansion.contains)).toEqual(['animal', 'mammal', 'cat', 'bird', 'parrot']);
  });

  it('agrees with $validate-code on every code of the system', async () => {
    const { client } = await setup({
      include: [
        { system: SYSTEM, filter: [{ property: 'concept', op: 'descendent-of', value: 'animal' }, { property: 'color', op: 'exists', value: 'false' }] },
        { system: SYSTEM, concept: [{ code: 'moss' }] },
      ],
    });
    const expanded = codes((await client.get(`/ValueSet/$expand?url=${url}&excludeNested=true`)).body.expansion.contains);
    for (const code of ['animal', 'mammal', 'dog', 'puppy', 'cat', 'bird', 'parrot', 'plant', 'tree', 'moss']) {
      const valid = await client.get(`/ValueSet/$validate-code?url=${url}&system=${encodeURIComponent(SYSTEM)}&code=${code}&abstract=true`);
      expect([code, valid.body.parameter[0].valueBoolean]).toEqual([code, expanded.includes(code)]);
    }
    expect(expanded).toEqual(['mammal', 'puppy', 'bird', 'moss']);
  });

  it('expands an instance and an inline value set', async () => {
    const { client, id } = await setup({ include: [{ system: SYSTEM, concept: [{ code: 'tree', display: 'A tree' }] }] });
    const instance = await client.get(`/ValueSet/${id}/$expand`);
    expect(instance.body.expansion.contains).toEqual([{ system: SYSTEM, code: 'tree', display: 'A tree' }]);
    const inline = await client.post(
      '/ValueSet/$expand',
      params({ name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: SYSTEM, concept: [{ code: 'cat' }] }] } } }),
    );
    expect(inline.body.expansion.contains).toEqual([{ system: SYSTEM, code: 'cat', display: 'Cat' }]);
  });

  it('survives a cycle in the hierarchy', async () => {
    const client = api.newProject();
    const cyclic = 'http://flint.test/CodeSystem/cyclic';
    await client.post('/CodeSystem', {
      resourceType: 'CodeSystem',
      url: cyclic,
      status: 'active',
      content: 'complete',
      concept: [
        { code: 'a', property: [{ code: 'parent', valueCode: 'b' }] },
        { code: 'b', property: [{ code: 'parent', valueCode: 'a' }] },
        { code: 'c' },
      ],
    });
    await withValueSet(client, VS, { include: [{ system: cyclic, filter: [{ property: 'concept', op: 'is-a', value: 'a' }] }] });
    const res = await client.get(`/ValueSet/$expand?url=${url}`);
    expect(res.status).toBe(200);
    expect(codes(res.body.expansion.contains).sort()).toEqual(['a', 'b']);
  });

  it('expands a FHIR R4 value set', async () => {
    const res = await api.newProject().get(`/ValueSet/$expand?url=${encodeURIComponent('http://hl7.org/fhir/ValueSet/administrative-gender')}`);
    expect(res.status).toBe(200);
    expect(codes(res.body.expansion.contains)).toEqual(['male', 'female', 'other', 'unknown']);
  });

  it('gives 400 invalid for an unknown url and for a bad count', async () => {
    const client = api.newProject();
    const res = await client.get('/ValueSet/$expand?url=http://nowhere.test/vs');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('http://nowhere.test/vs');
    expect((await client.get(`/ValueSet/$expand?url=${url}&count=abc`)).status).toBe(400);
  });
});

describe('ValueSet/$expand of a deep hierarchy', () => {
  it('lists an expansion whose hierarchy is deeper than 100 levels flat', async () => {
    const client = api.newProject();
    const system = 'http://flint.test/CodeSystem/chain';
    const created = await client.post('/CodeSystem', { resourceType: 'CodeSystem', url: system, status: 'active', content: 'not-present', hierarchyMeaning: 'is-a' });
    expect(created.status, created.text).toBe(201);
    // A chain of 150 codes, each the parent of the next. (Thousands of levels would overflow the
    // stack when the answer is serialised; 150 keeps the import's transitive closure small.)
    const size = 150;
    const parameter: unknown[] = [{ name: 'system', valueUri: system }];
    for (let i = 0; i < size; i++) parameter.push({ name: 'concept', valueCoding: { code: `c${i}` } });
    for (let i = 1; i < size; i++) {
      parameter.push({ name: 'property', part: [{ name: 'code', valueCode: `c${i}` }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: `c${i - 1}` }] });
    }
    const imported = await client.post('/CodeSystem/$import', { resourceType: 'Parameters', parameter });
    expect(imported.status, imported.text).toBe(200);
    const chain = 'http://flint.test/ValueSet/chain';
    await withValueSet(client, chain, { include: [{ system }] });
    const res = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(chain)}`);
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body.expansion.total).toBe(size);
    expect(res.body.expansion.contains).toHaveLength(size);
    expect(res.body.expansion.contains[size - 1]).toEqual({ system, code: `c${size - 1}` });
  });

  it('still nests a hierarchy of a few levels', async () => {
    const { client } = await setup({ include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$expand?url=${url}`);
    expect(res.status).toBe(200);
    expect(res.body.expansion.contains.map((c: any) => c.code)).toEqual(['animal', 'plant']);
    expect(res.body.expansion.contains[0].contains[0].contains[0].contains[0].code).toBe('puppy');
  });
});
