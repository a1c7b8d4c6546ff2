import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { animals, out, params, SYSTEM, withAnimals } from './fixtures.js';

const api = await useTestServer();

describe('CodeSystem/$lookup', () => {
  it('looks up code and system by POST: name, display, properties, parents, children, designations', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.post('/CodeSystem/$lookup', params({ name: 'code', valueCode: 'dog' }, { name: 'system', valueUri: SYSTEM }));
    expect(res.status).toBe(200);
    expect(out(res.body, 'name')).toEqual([{ name: 'name', valueString: 'Animals and plants' }]);
    expect(out(res.body, 'display')).toEqual([{ name: 'display', valueString: 'Dog' }]);
    expect(out(res.body, 'designation')).toEqual([{ name: 'designation', part: [{ name: 'language', valueCode: 'de' }, { name: 'value', valueString: 'Hund' }] }]);
    expect(out(res.body, 'property')).toEqual([
      { name: 'property', part: [{ name: 'code', valueCode: 'color' }, { name: 'value', valueCode: 'brown' }, { name: 'description', valueString: 'Colour of the living thing' }] },
      { name: 'property', part: [{ name: 'code', valueCode: 'legs' }, { name: 'value', valueInteger: 4 }, { name: 'description', valueString: 'Number of legs' }] },
      { name: 'property', part: [{ name: 'code', valueCode: 'parent' }, { name: 'value', valueCode: 'mammal' }, { name: 'description', valueString: expect.any(String) }] },
      { name: 'property', part: [{ name: 'code', valueCode: 'child' }, { name: 'value', valueCode: 'puppy' }, { name: 'description', valueString: expect.any(String) }] },
    ]);
  });

  it('gives the same result by GET', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const post = await client.post('/CodeSystem/$lookup', params({ name: 'code', valueCode: 'cat' }, { name: 'system', valueUri: SYSTEM }));
    const get = await client.get(`/CodeSystem/$lookup?code=cat&system=${encodeURIComponent(SYSTEM)}`);
    expect(get.status).toBe(200);
    expect(get.body).toEqual(post.body);
  });

  it('looks up a coding', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.post('/CodeSystem/$lookup', params({ name: 'coding', valueCoding: { system: SYSTEM, code: 'puppy' } }));
    expect(out(res.body, 'display')).toEqual([{ name: 'display', valueString: 'Puppy' }]);
    expect(out(res.body, 'property').map((p) => p.part[1])).toEqual([{ name: 'value', valueCode: 'dog' }]);
  });

  it('refuses a coding in the query string', async () => {
    const res = await api.newProject().get(`/CodeSystem/$lookup?coding=${encodeURIComponent(`${SYSTEM}|dog`)}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"coding"');
  });

  it('looks up on an instance with only the code (GET and POST)', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    const get = await client.get(`/CodeSystem/${id}/$lookup?code=tree`);
    expect(get.status).toBe(200);
    expect(out(get.body, 'display')).toEqual([{ name: 'display', valueString: 'Tree' }]);
    const post = await client.post(`/CodeSystem/${id}/$lookup`, params({ name: 'coding', valueCoding: { code: 'tree' } }));
    expect(post.body).toEqual(get.body);
  });

  it('takes parent links from parent properties too', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const moss = await client.get(`/CodeSystem/$lookup?code=moss&system=${encodeURIComponent(SYSTEM)}`);
    expect(out(moss.body, 'property').map((p) => [p.part[0].valueCode, p.part[1].valueCode])).toEqual([['parent', 'plant']]);
    const plant = await client.get(`/CodeSystem/$lookup?code=plant&system=${encodeURIComponent(SYSTEM)}`);
    expect(out(plant.body, 'property').map((p) => [p.part[0].valueCode, p.part[1].valueCode])).toEqual([['child', 'moss'], ['child', 'tree']]);
  });

  it('limits the properties to those asked for', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.get(`/CodeSystem/$lookup?code=dog&system=${encodeURIComponent(SYSTEM)}&property=parent&property=legs`);
    expect(out(res.body, 'property').map((p) => p.part[0].valueCode)).toEqual(['legs', 'parent']);
  });

  it('gives 404 not-found naming the code', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.get(`/CodeSystem/$lookup?code=unicorn&system=${encodeURIComponent(SYSTEM)}`);
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-found');
    expect(res.body.issue[0].details.text).toContain('"unicorn"');
  });

  it('gives 404 not-found naming an unknown code system', async () => {
    const res = await api.newProject().get('/CodeSystem/$lookup?code=x&system=http://nowhere.test/cs');
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-found');
    expect(res.body.issue[0].details.text).toContain('http://nowhere.test/cs');
  });

  it('needs a system with the code at type level', async () => {
    const res = await api.newProject().get('/CodeSystem/$lookup?code=dog');
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['Parameters.parameter'] });
  });

  it('does not see another project\'s code system', async () => {
    await withAnimals(api.newProject());
    const res = await api.newProject().get(`/CodeSystem/$lookup?code=dog&system=${encodeURIComponent(SYSTEM)}`);
    expect(res.status).toBe(404);
  });

  it('serves the FHIR R4 code systems to every project', async () => {
    const res = await api.newProject().get('/CodeSystem/$lookup?code=female&system=http://hl7.org/fhir/administrative-gender');
    expect(res.status).toBe(200);
    expect(out(res.body, 'display')).toEqual([{ name: 'display', valueString: 'Female' }]);
    const v3 = await api.newProject().get('/CodeSystem/$lookup?code=AMB&system=http://terminology.hl7.org/CodeSystem/v3-ActCode');
    expect(v3.status).toBe(200);
    expect(out(v3.body, 'display')[0].valueString).toMatch(/ambulatory/i);
  });

  it('re-indexes a code system on update and forgets it on delete', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    const renamed = structuredClone(animals) as any;
    renamed.concept[1].display = 'Green plant';
    expect((await client.put(`/CodeSystem/${id}`, { ...renamed, id })).status).toBe(200);
    const res = await client.get(`/CodeSystem/$lookup?code=plant&system=${encodeURIComponent(SYSTEM)}`);
    expect(out(res.body, 'display')).toEqual([{ name: 'display', valueString: 'Green plant' }]);
    await client.delete(`/CodeSystem/${id}`);
    expect((await client.get(`/CodeSystem/$lookup?code=plant&system=${encodeURIComponent(SYSTEM)}`)).status).toBe(404);
  });

  it('looks up a given version', async () => {
    const client = api.newProject();
    await client.post('/CodeSystem', { ...animals, version: '1', concept: [{ code: 'a', display: 'One' }] });
    await client.post('/CodeSystem', { ...animals, version: '2', concept: [{ code: 'a', display: 'Two' }] });
    const v1 = await client.get(`/CodeSystem/$lookup?code=a&system=${encodeURIComponent(SYSTEM)}&version=1`);
    expect(out(v1.body, 'display')).toEqual([{ name: 'display', valueString: 'One' }]);
    expect(out(v1.body, 'version')).toEqual([{ name: 'version', valueString: '1' }]);
    const v3 = await client.get(`/CodeSystem/$lookup?code=a&system=${encodeURIComponent(SYSTEM)}&version=3`);
    expect(v3.status).toBe(404);
  });
});
