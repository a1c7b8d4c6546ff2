import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { createInBatches as createAll, matchesByOffset as pagesOf, matchIds } from './helpers.js';

/**
 * A search in one project sorted by one string parameter reads its page from the string index in
 * the page's order (pages/growing-windows.ts with stringSortMatches), falling back to the
 * general statement when those rows fall short. These pin the order that must come out either way.
 */
const api = await useTestServer();

const patient = (family: string | undefined, extra: Record<string, unknown> = {}) => ({
  resourceType: 'Patient',
  ...(family !== undefined && { name: [{ family }] }),
  ...extra,
});

describe('a search sorted by a string parameter', () => {
  it('pages through more matches than the first rows it reads, in order both ways', async () => {
    const p = api.newProject();
    const families = Array.from({ length: 130 }, (_, i) => `Fam${String(i).padStart(3, '0')}`);
    const ids = await createAll(p, families.map((family) => patient(family)));
    expect(await pagesOf(p, '/Patient?_sort=family', 20, 130)).toEqual(ids);
    expect(await pagesOf(p, '/Patient?_sort=-family', 20, 130)).toEqual([...ids].reverse());
  });

  it('breaks ties by id ascending when sorted descending, however many share the value', async () => {
    const p = api.newProject();
    const unique = await createAll(p, Array.from({ length: 10 }, (_, i) => patient(`Zed${i}`)));
    const shared = (await createAll(p, Array.from({ length: 200 }, () => patient('Adams')))).sort();
    const expected = [...unique].reverse().concat(shared.slice(0, 10));
    expect(matchIds(await p.get('/Patient?_sort=-family&_count=20'))).toEqual(expected);
  });

  it('keeps only the matches of the filters and lists resources without a value last', async () => {
    const p = api.newProject();
    const [b, a, none] = await createAll(p, [
      patient('Baker', { gender: 'female' }),
      patient('Adams', { gender: 'female' }),
      patient(undefined, { gender: 'female' }),
    ]);
    await createAll(p, Array.from({ length: 120 }, (_, i) => patient(`Male${i}`, { gender: 'male' })));
    expect(await pagesOf(p, '/Patient?gender=female&_sort=family', 1, 3)).toEqual([a, b, none]);
    expect(await pagesOf(p, '/Patient?gender=female&_sort=-family', 1, 3)).toEqual([b, a, none]);
  });
});
