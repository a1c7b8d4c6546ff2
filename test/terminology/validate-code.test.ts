import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { out, params, SYSTEM, withAnimals, withValueSet } from './fixtures.js';

const api = await useTestServer();
const VS = 'http://flint.test/ValueSet/test';

/** A project with the animals code system and one value set of `compose`. */
async function setup(compose: unknown): Promise<ProjectClient> {
  const client = api.newProject();
  await withAnimals(client);
  await withValueSet(client, VS, compose);
  return client;
}

async function check(client: ProjectClient, code: string, extra = ''): Promise<any> {
  const res = await client.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=${encodeURIComponent(SYSTEM)}&code=${code}${extra}`);
  expect(res.status).toBe(200);
  return res.body;
}

const result = (body: any) => out(body, 'result')[0]?.valueBoolean;

describe('ValueSet/$validate-code', () => {
  it('accepts a listed concept with its display, by GET and POST alike', async () => {
    const client = await setup({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'cat' }] }] });
    const get = await check(client, 'dog');
    expect(get).toEqual({ resourceType: 'Parameters', parameter: [{ name: 'result', valueBoolean: true }, { name: 'display', valueString: 'Dog' }] });
    const post = await client.post('/ValueSet/$validate-code', params({ name: 'url', valueUri: VS }, { name: 'system', valueUri: SYSTEM }, { name: 'code', valueCode: 'dog' }));
    expect(post.body).toEqual(get);
  });

  it('refuses a concept that is not listed, with a message', async () => {
    const client = await setup({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    const body = await check(client, 'cat');
    expect(result(body)).toBe(false);
    expect(out(body, 'message')[0].valueString).toContain('"cat"');
  });

  it('includes a whole code system', async () => {
    const client = await setup({ include: [{ system: SYSTEM }] });
    expect(result(await check(client, 'tree'))).toBe(true);
    expect(result(await check(client, 'unicorn'))).toBe(false);
  });

  it('refuses a code of another system', async () => {
    const client = await setup({ include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=http://other.test&code=dog`);
    expect(result(res.body)).toBe(false);
  });

  it('applies is-a through several levels of nesting', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    expect(result(await check(client, 'mammal'))).toBe(true);
    expect(result(await check(client, 'puppy'))).toBe(true);
    expect(result(await check(client, 'parrot'))).toBe(false);
  });

  it('applies is-a through parent properties', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'plant' }] }] });
    expect(result(await check(client, 'moss'))).toBe(true);
    expect(result(await check(client, 'tree'))).toBe(true);
    expect(result(await check(client, 'dog'))).toBe(false);
  });

  it('applies descendent-of without the code itself', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'descendent-of', value: 'mammal' }] }] });
    expect(result(await check(client, 'mammal'))).toBe(false);
    expect(result(await check(client, 'puppy'))).toBe(true);
  });

  it('applies is-not-a', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-not-a', value: 'animal' }] }] });
    expect(result(await check(client, 'tree'))).toBe(true);
    expect(result(await check(client, 'puppy'))).toBe(false);
  });

  it('applies = on a property', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'color', op: '=', value: 'brown' }] }] });
    expect(result(await check(client, 'dog'))).toBe(true);
    expect(result(await check(client, 'cat'))).toBe(false);
  });

  it('applies regex to the code', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'code', op: 'regex', value: 'p.*' }] }] });
    expect(result(await check(client, 'puppy'))).toBe(true);
    expect(result(await check(client, 'plant'))).toBe(true);
    expect(result(await check(client, 'dog'))).toBe(false);
  });

  it('applies in to a property', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'color', op: 'in', value: 'black,green' }] }] });
    expect(result(await check(client, 'cat'))).toBe(true);
    expect(result(await check(client, 'parrot'))).toBe(true);
    expect(result(await check(client, 'dog'))).toBe(false);
  });

  it('applies exists', async () => {
    const client = await setup({ include: [{ system: SYSTEM, filter: [{ property: 'legs', op: 'exists', value: 'true' }] }] });
    expect(result(await check(client, 'dog'))).toBe(true);
    expect(result(await check(client, 'cat'))).toBe(false);
  });

  it('combines several filters of one include (all must hold)', async () => {
    const client = await setup({
      include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'animal' }, { property: 'color', op: 'exists', value: 'true' }] }],
    });
    expect(result(await check(client, 'parrot'))).toBe(true);
    expect(result(await check(client, 'bird'))).toBe(false);
  });

  it('honours compose.exclude', async () => {
    const client = await setup({
      include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }],
      exclude: [{ system: SYSTEM, concept: [{ code: 'cat' }] }],
    });
    expect(result(await check(client, 'dog'))).toBe(true);
    expect(result(await check(client, 'cat'))).toBe(false);
  });

  it('includes an imported value set', async () => {
    const client = await setup({ include: [{ valueSet: ['http://flint.test/ValueSet/birds'] }] });
    await withValueSet(client, 'http://flint.test/ValueSet/birds', { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'bird' }] }] });
    expect(result(await check(client, 'parrot'))).toBe(true);
    expect(result(await check(client, 'dog'))).toBe(false);
  });

  it('refuses an abstract code unless abstract=true', async () => {
    const client = await setup({ include: [{ system: SYSTEM }] });
    const plain = await check(client, 'animal');
    expect(result(plain)).toBe(false);
    expect(out(plain, 'message')[0].valueString).toContain('abstract');
    expect(result(await check(client, 'animal', '&abstract=true'))).toBe(true);
  });

  it('gives result false, a message and the correct display for a wrong display', async () => {
    const client = await setup({ include: [{ system: SYSTEM }] });
    const body = await check(client, 'dog', '&display=Doggo');
    expect(result(body)).toBe(false);
    expect(out(body, 'message')[0].valueString).toContain('Doggo');
    expect(out(body, 'display')).toEqual([{ name: 'display', valueString: 'Dog' }]);
    expect(result(await check(client, 'dog', '&display=Hund'))).toBe(true);
  });

  it('validates a coding', async () => {
    const client = await setup({ include: [{ system: SYSTEM }] });
    const res = await client.post('/ValueSet/$validate-code', params({ name: 'url', valueUri: VS }, { name: 'coding', valueCoding: { system: SYSTEM, code: 'cat' } }));
    expect(result(res.body)).toBe(true);
  });

  it('accepts a codeableConcept when any coding is included', async () => {
    const client = await setup({ include: [{ system: SYSTEM, concept: [{ code: 'cat' }] }] });
    const cc = (codes: string[]) => ({ name: 'codeableConcept', valueCodeableConcept: { coding: codes.map((code) => ({ system: SYSTEM, code })) } });
    const yes = await client.post('/ValueSet/$validate-code', params({ name: 'url', valueUri: VS }, cc(['dog', 'cat'])));
    expect(result(yes.body)).toBe(true);
    const no = await client.post('/ValueSet/$validate-code', params({ name: 'url', valueUri: VS }, cc(['dog', 'tree'])));
    expect(result(no.body)).toBe(false);
  });

  it('works on an instance', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const id = await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/${id}/$validate-code?system=${encodeURIComponent(SYSTEM)}&code=dog`);
    expect(result(res.body)).toBe(true);
  });

  it('gives 400 invalid naming an unknown value set url', async () => {
    const res = await api.newProject().get(`/ValueSet/$validate-code?url=http://nowhere.test/vs&system=${encodeURIComponent(SYSTEM)}&code=dog`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('invalid');
    expect(res.body.issue[0].details.text).toContain('http://nowhere.test/vs');
  });

  it('needs code with system, coding or codeableConcept', async () => {
    const client = await setup({ include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&code=dog`);
    expect(res.status).toBe(400);
  });

  it('refuses a codeableConcept in a query string', async () => {
    const res = await api.newProject().get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&codeableConcept=x`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"codeableConcept"');
  });

  it('validates against the FHIR R4 value sets', async () => {
    const client = api.newProject();
    const url = encodeURIComponent('http://hl7.org/fhir/ValueSet/administrative-gender');
    const ok = await client.get(`/ValueSet/$validate-code?url=${url}&system=http://hl7.org/fhir/administrative-gender&code=other`);
    expect(result(ok.body)).toBe(true);
    const no = await client.get(`/ValueSet/$validate-code?url=${url}&system=http://hl7.org/fhir/administrative-gender&code=robot`);
    expect(result(no.body)).toBe(false);
  });
});

describe('CodeSystem/$validate-code', () => {
  it('validates a code against a code system by url', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const yes = await client.get(`/CodeSystem/$validate-code?url=${encodeURIComponent(SYSTEM)}&code=puppy`);
    expect(yes.body).toEqual({ resourceType: 'Parameters', parameter: [{ name: 'result', valueBoolean: true }, { name: 'display', valueString: 'Puppy' }] });
    const no = await client.get(`/CodeSystem/$validate-code?url=${encodeURIComponent(SYSTEM)}&code=unicorn`);
    expect(result(no.body)).toBe(false);
  });

  it('validates on an instance and checks the display', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    const res = await client.post(`/CodeSystem/${id}/$validate-code`, params({ name: 'code', valueCode: 'cat' }, { name: 'display', valueString: 'Kitty' }));
    expect(result(res.body)).toBe(false);
    expect(out(res.body, 'display')).toEqual([{ name: 'display', valueString: 'Cat' }]);
  });
});

describe('CodeSystem/$subsumes', () => {
  const subsumes = async (client: ProjectClient, a: string, b: string) =>
    (await client.get(`/CodeSystem/$subsumes?system=${encodeURIComponent(SYSTEM)}&codeA=${a}&codeB=${b}`)).body;

  it('answers from the hierarchy', async () => {
    const client = api.newProject();
    await withAnimals(client);
    expect(out(await subsumes(client, 'animal', 'puppy'), 'outcome')).toEqual([{ name: 'outcome', valueCode: 'subsumes' }]);
    expect(out(await subsumes(client, 'puppy', 'mammal'), 'outcome')).toEqual([{ name: 'outcome', valueCode: 'subsumed-by' }]);
    expect(out(await subsumes(client, 'dog', 'dog'), 'outcome')).toEqual([{ name: 'outcome', valueCode: 'equivalent' }]);
    expect(out(await subsumes(client, 'dog', 'tree'), 'outcome')).toEqual([{ name: 'outcome', valueCode: 'not-subsumed' }]);
  });

  it('gives 404 for an unknown code', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.get(`/CodeSystem/$subsumes?system=${encodeURIComponent(SYSTEM)}&codeA=dog&codeB=unicorn`);
    expect(res.status).toBe(404);
    expect(res.body.issue[0].details.text).toContain('"unicorn"');
  });
});
