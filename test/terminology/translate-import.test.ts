import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { out, params, SYSTEM, withAnimals } from './fixtures.js';

const api = await useTestServer();
const MAP = 'http://flint.test/ConceptMap/animals-to-latin';
const LATIN = 'http://flint.test/CodeSystem/latin';

async function withMap(client: ProjectClient): Promise<string> {
  const res = await client.post('/ConceptMap', {
    resourceType: 'ConceptMap',
    url: MAP,
    status: 'active',
    sourceUri: 'http://flint.test/ValueSet/animals',
    targetUri: 'http://flint.test/ValueSet/latin',
    group: [
      {
        source: SYSTEM,
        target: LATIN,
        element: [
          { code: 'dog', display: 'Dog', target: [{ code: 'canis', display: 'Canis', equivalence: 'equivalent' }] },
          // A narrower mapping needs a comment (invariant cmd-1).
          { code: 'puppy', target: [{ code: 'canis', equivalence: 'narrower', comment: 'a puppy is a young dog' }] },
          { code: 'tree', target: [{ equivalence: 'unmatched' }] },
        ],
      },
    ],
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe('ConceptMap/$translate', () => {
  it('translates a code by url, by GET and POST alike', async () => {
    const client = api.newProject();
    await withMap(client);
    const get = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(MAP)}&system=${encodeURIComponent(SYSTEM)}&code=dog`);
    expect(get.status).toBe(200);
    expect(get.body).toEqual({
      resourceType: 'Parameters',
      parameter: [
        { name: 'result', valueBoolean: true },
        { name: 'match', part: [{ name: 'equivalence', valueCode: 'equivalent' }, { name: 'concept', valueCoding: { system: LATIN, code: 'canis', display: 'Canis' } }, { name: 'source', valueUri: MAP }] },
      ],
    });
    const post = await client.post('/ConceptMap/$translate', params({ name: 'url', valueUri: MAP }, { name: 'coding', valueCoding: { system: SYSTEM, code: 'dog' } }));
    expect(post.body).toEqual(get.body);
  });

  it('translates in reverse', async () => {
    const client = api.newProject();
    const id = await withMap(client);
    const res = await client.get(`/ConceptMap/${id}/$translate?system=${encodeURIComponent(LATIN)}&code=canis&reverse=true`);
    expect(out(res.body, 'result')).toEqual([{ name: 'result', valueBoolean: true }]);
    expect(out(res.body, 'match').map((m) => [m.part[0].valueCode, m.part[1].valueCoding.code])).toEqual([
      ['equivalent', 'dog'],
      ['wider', 'puppy'],
    ]);
  });

  it('finds the map by source value set when none is named', async () => {
    const client = api.newProject();
    await withMap(client);
    const res = await client.get(`/ConceptMap/$translate?source=${encodeURIComponent('http://flint.test/ValueSet/animals')}&system=${encodeURIComponent(SYSTEM)}&code=puppy`);
    expect(out(res.body, 'match')[0].part[0]).toEqual({ name: 'equivalence', valueCode: 'narrower' });
  });

  it('gives result false with a message when nothing maps', async () => {
    const client = api.newProject();
    await withMap(client);
    const res = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(MAP)}&system=${encodeURIComponent(SYSTEM)}&code=tree`);
    expect(out(res.body, 'result')).toEqual([{ name: 'result', valueBoolean: false }]);
    expect(out(res.body, 'message')[0].valueString).toContain('tree');
    expect(out(res.body, 'match')).toEqual([{ name: 'match', part: [{ name: 'equivalence', valueCode: 'unmatched' }, { name: 'source', valueUri: MAP }] }]);
  });
});

describe('ConceptMap/$import', () => {
  it('adds mappings in bulk and refuses GET', async () => {
    const client = api.newProject();
    const id = await withMap(client);
    const res = await client.post(
      '/ConceptMap/$import',
      params(
        { name: 'url', valueUri: MAP },
        { name: 'mapping', part: [{ name: 'source', valueCoding: { system: SYSTEM, code: 'cat' } }, { name: 'target', valueCoding: { system: LATIN, code: 'felis' } }] },
        { name: 'mapping', part: [{ name: 'source', valueCoding: { system: SYSTEM, code: 'dog' } }, { name: 'target', valueCoding: { system: LATIN, code: 'lupus' } }, { name: 'equivalence', valueCode: 'wider' }] },
      ),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'ConceptMap', id });
    const cat = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(MAP)}&system=${encodeURIComponent(SYSTEM)}&code=cat`);
    expect(out(cat.body, 'match')[0].part[1].valueCoding).toEqual({ system: LATIN, code: 'felis' });
    const dog = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(MAP)}&system=${encodeURIComponent(SYSTEM)}&code=dog`);
    expect(out(dog.body, 'match').map((m) => m.part[1].valueCoding.code)).toEqual(['canis', 'lupus']);
    const get = await client.get(`/ConceptMap/$import?url=${encodeURIComponent(MAP)}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});

describe('CodeSystem/$import', () => {
  it('adds concepts, properties, hierarchy and designations to the concept tables', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    const res = await client.post(
      '/CodeSystem/$import',
      params(
        { name: 'system', valueUri: SYSTEM },
        { name: 'concept', valueCoding: { code: 'wolf', display: 'Wolf' } },
        { name: 'concept', valueCoding: { code: 'cub', display: 'Cub' } },
        { name: 'property', part: [{ name: 'code', valueCode: 'wolf' }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: 'mammal' }] },
        { name: 'property', part: [{ name: 'code', valueCode: 'cub' }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: 'wolf' }] },
        { name: 'property', part: [{ name: 'code', valueCode: 'wolf' }, { name: 'property', valueCode: 'color' }, { name: 'value', valueCode: 'grey' }] },
        { name: 'designation', part: [{ name: 'code', valueCode: 'wolf' }, { name: 'language', valueCode: 'de' }, { name: 'value', valueString: 'Wolf' }] },
      ),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'CodeSystem', id });
    const lookup = await client.get(`/CodeSystem/$lookup?system=${encodeURIComponent(SYSTEM)}&code=wolf`);
    expect(out(lookup.body, 'display')).toEqual([{ name: 'display', valueString: 'Wolf' }]);
    expect(out(lookup.body, 'property').map((p) => [p.part[0].valueCode, p.part[1].valueCode])).toEqual([
      ['color', 'grey'],
      ['parent', 'mammal'],
      ['child', 'cub'],
    ]);
    const subsumes = await client.get(`/CodeSystem/$subsumes?system=${encodeURIComponent(SYSTEM)}&codeA=animal&codeB=cub`);
    expect(out(subsumes.body, 'outcome')).toEqual([{ name: 'outcome', valueCode: 'subsumes' }]);
  });

  it('keeps imported concepts when the resource is updated without a concept list', async () => {
    const client = api.newProject();
    const created = await client.post('/CodeSystem', { resourceType: 'CodeSystem', url: 'http://flint.test/big', status: 'active', content: 'not-present' });
    await client.post(`/CodeSystem/${created.body.id}/$import`, params({ name: 'concept', valueCoding: { code: 'x1', display: 'X one' } }));
    await client.put(`/CodeSystem/${created.body.id}`, { ...created.body, title: 'Big one' });
    const lookup = await client.get('/CodeSystem/$lookup?system=http://flint.test/big&code=x1');
    expect(out(lookup.body, 'name')).toEqual([{ name: 'name', valueString: 'Big one' }]);
    expect(out(lookup.body, 'display')).toEqual([{ name: 'display', valueString: 'X one' }]);
  });

  it('refuses properties of unknown codes and changes nothing', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.post(
      '/CodeSystem/$import',
      params(
        { name: 'system', valueUri: SYSTEM },
        { name: 'concept', valueCoding: { code: 'fox' } },
        { name: 'property', part: [{ name: 'code', valueCode: 'ghost' }, { name: 'property', valueCode: 'color' }, { name: 'value', valueCode: 'white' }] },
      ),
    );
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"ghost"');
    expect((await client.get(`/CodeSystem/$lookup?system=${encodeURIComponent(SYSTEM)}&code=fox`)).status).toBe(404);
  });

  it('gives 404 for a code system not in the project', async () => {
    const res = await api.newProject().post('/CodeSystem/$import', params({ name: 'system', valueUri: 'http://nowhere.test' }));
    expect(res.status).toBe(404);
  });
});
