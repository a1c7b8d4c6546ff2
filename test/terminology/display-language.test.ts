import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { out, params, withValueSet } from './fixtures.js';

const api = await useTestServer();
const SYSTEM = 'http://flint.test/CodeSystem/pets-in-languages';
const VS = 'http://flint.test/ValueSet/pets-in-languages';

/** Displays in English; designations in German (and Swiss German), French (as a synonym and as a display). */
const pets = {
  resourceType: 'CodeSystem',
  url: SYSTEM,
  name: 'Pets',
  status: 'active',
  content: 'complete',
  concept: [
    {
      code: 'dog',
      display: 'Dog',
      designation: [
        { language: 'de', value: 'Hund' },
        { language: 'de-CH', value: 'Hündli' },
        { language: 'fr', use: { system: 'http://snomed.info/sct', code: '900000000000013009' }, value: 'Toutou' },
        { language: 'fr', value: 'Chien' },
      ],
      concept: [{ code: 'puppy', display: 'Puppy', designation: [{ language: 'de', value: 'Welpe' }] }],
    },
    { code: 'cat', display: 'Cat' },
  ],
};

async function withPets(): Promise<ProjectClient> {
  const client = api.newProject();
  const res = await client.post('/CodeSystem', pets);
  if (res.status !== 201) throw new Error(`CodeSystem not created: ${res.text}`);
  return client;
}

const system = encodeURIComponent(SYSTEM);
const display = (body: any): unknown => out(body, 'display')[0]?.valueString;

describe('displayLanguage on CodeSystem/$lookup', () => {
  it('gives the designation in the requested language as the display, by GET and POST alike', async () => {
    const client = await withPets();
    const get = await client.get(`/CodeSystem/$lookup?system=${system}&code=dog&displayLanguage=de`);
    expect(get.status, get.text).toBe(200);
    expect(display(get.body)).toBe('Hund');
    const post = await client.post(
      '/CodeSystem/$lookup',
      params({ name: 'system', valueUri: SYSTEM }, { name: 'code', valueCode: 'dog' }, { name: 'displayLanguage', valueCode: 'de' }),
    );
    expect(post.body).toEqual(get.body);
  });

  it('prefers the exact language tag over the same primary language', async () => {
    const client = await withPets();
    const res = await client.get(`/CodeSystem/$lookup?system=${system}&code=dog&displayLanguage=de-CH`);
    expect(display(res.body)).toBe('Hündli');
  });

  it('falls back to the primary language of a regional tag', async () => {
    const client = await withPets();
    const res = await client.get(`/CodeSystem/$lookup?system=${system}&code=dog&displayLanguage=de-AT`);
    expect(display(res.body)).toBe('Hund');
  });

  it('prefers a designation without a use over a synonym of the same language', async () => {
    const client = await withPets();
    const res = await client.get(`/CodeSystem/$lookup?system=${system}&code=dog&displayLanguage=fr`);
    expect(display(res.body)).toBe('Chien');
  });

  it('keeps the concept display when there is no designation in the language', async () => {
    const client = await withPets();
    const res = await client.get(`/CodeSystem/$lookup?system=${system}&code=dog&displayLanguage=ja`);
    expect(res.status).toBe(200);
    expect(display(res.body)).toBe('Dog');
  });

  it('still lists every designation', async () => {
    const client = await withPets();
    const res = await client.get(`/CodeSystem/$lookup?system=${system}&code=dog&displayLanguage=de`);
    expect(out(res.body, 'designation')).toHaveLength(4);
  });
});

describe('displayLanguage on ValueSet/$validate-code', () => {
  it('returns the display in the requested language', async () => {
    const client = await withPets();
    await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=${system}&code=dog&displayLanguage=de`);
    expect(res.status, res.text).toBe(200);
    expect(out(res.body, 'result')[0].valueBoolean).toBe(true);
    expect(display(res.body)).toBe('Hund');
  });

  it('names the correct display in the requested language when the display is wrong', async () => {
    const client = await withPets();
    await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const res = await client.post(
      '/ValueSet/$validate-code',
      params(
        { name: 'url', valueUri: VS },
        { name: 'coding', valueCoding: { system: SYSTEM, code: 'dog', display: 'Katze' } },
        { name: 'displayLanguage', valueCode: 'de' },
      ),
    );
    expect(out(res.body, 'result')[0].valueBoolean).toBe(false);
    expect(display(res.body)).toBe('Hund');
    expect(out(res.body, 'message')[0].valueString).toContain('"Hund"');
  });

  it('accepts a designation in any language as a valid display', async () => {
    const client = await withPets();
    await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$validate-code?url=${encodeURIComponent(VS)}&system=${system}&code=dog&display=Chien&displayLanguage=de`);
    expect(out(res.body, 'result')[0].valueBoolean).toBe(true);
  });
});

describe('displayLanguage on ValueSet/$expand', () => {
  it('gives each code the display in the requested language where there is one, and echoes the parameter', async () => {
    const client = await withPets();
    await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&excludeNested=true&displayLanguage=de`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.expansion.contains.map((c: any) => [c.code, c.display])).toEqual([
      ['dog', 'Hund'],
      ['puppy', 'Welpe'],
      ['cat', 'Cat'],
    ]);
    expect(res.body.expansion.parameter).toContainEqual({ name: 'displayLanguage', valueCode: 'de' });
  });

  it('uses the language in nested and paged expansions too', async () => {
    const client = await withPets();
    await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const nested = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&displayLanguage=de`);
    expect(nested.body.expansion.contains[0]).toMatchObject({ code: 'dog', display: 'Hund', contains: [{ code: 'puppy', display: 'Welpe' }] });
    const paged = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&offset=1&count=1&displayLanguage=de`);
    expect(paged.body.expansion.contains).toEqual([{ system: SYSTEM, code: 'puppy', display: 'Welpe' }]);
  });

  it('gives the concept displays without displayLanguage', async () => {
    const client = await withPets();
    await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
    const res = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&excludeNested=true`);
    expect(res.body.expansion.contains.map((c: any) => c.display)).toEqual(['Dog', 'Puppy', 'Cat']);
  });
});
