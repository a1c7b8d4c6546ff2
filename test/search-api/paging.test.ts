import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, expectInvalid, link, matchIds, pathOf } from './helpers.js';

const api = await useTestServer();

async function patients(p: ProjectClient, n: number, extra: (i: number) => Record<string, unknown> = () => ({})): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await create(p, { resourceType: 'Patient', ...extra(i) }));
  return ids;
}

/** Gives every resource of the project the same lastUpdated, so only the id orders them. */
async function sameLastUpdated(p: ProjectClient): Promise<void> {
  await api.server.services.db.execute(`UPDATE resource SET "lastUpdated" = '2024-01-01T00:00:00Z' WHERE "projectId" = $1`, [p.projectId]);
}

/** Follows `next` links from the first page and returns every id seen, in order. */
async function walk(p: ProjectClient, first: string, onPage?: (page: number) => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  let path: string | undefined = first;
  for (let page = 0; path !== undefined && page < 100; page++) {
    const res = await p.get(path);
    seen.push(...matchIds(res));
    await onPage?.(page);
    const next = link(res, 'next');
    path = next === undefined ? undefined : pathOf(next);
  }
  return seen;
}

describe('_count', () => {
  it('defaults to 20', async () => {
    const p = api.newProject();
    await patients(p, 21);
    const res = await p.get('/Patient');
    expect(matchIds(res)).toHaveLength(20);
    expect(link(res, 'self')).toContain('_count=20');
    expect(link(res, 'next')).toBeDefined();
  });

  it('above 1000 is clamped to 1000 and the self link shows 1000', async () => {
    const p = api.newProject();
    await patients(p, 2);
    const res = await p.get('/Patient?_count=5000');
    expect(matchIds(res)).toHaveLength(2);
    expect(link(res, 'self')).toContain('_count=1000');
    expect(link(res, 'self')).not.toContain('5000');
  });

  it('_count=0 returns no entries', async () => {
    const p = api.newProject();
    await patients(p, 2);
    const res = await p.get('/Patient?_count=0&_total=accurate');
    expect(res.body.entry).toBeUndefined();
    expect(res.body.total).toBe(2);
  });

  it('a malformed _count gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?_count=abc'), '_count');
    expectInvalid(await p.get('/Patient?_count=-1'), '_count');
  });

  it('_count and _offset take digits only: hexadecimal, exponents, signs and spaces give 400', async () => {
    const p = api.newProject();
    for (const value of ['0x10', '1e3', '+5', '%2010', '1.0']) {
      for (const name of ['_count', '_offset']) {
        const res = await p.get(`/Patient?${name}=${value}`);
        expectInvalid(res, name);
        expect(res.body.issue[0].expression).toEqual([name]);
      }
    }
  });
});

describe('_offset', () => {
  it('pages by offset with self, first, previous and next links', async () => {
    const p = api.newProject();
    const ids = await patients(p, 5);
    const res = await p.get('/Patient?_sort=_id&_count=2&_offset=2');
    expect(matchIds(res)).toEqual([...ids].sort().slice(2, 4));
    expect(link(res, 'self')).toContain('_offset=2');
    expect(link(res, 'first')).not.toContain('_offset');
    expect(link(res, 'previous')).toContain('_count=2');
    expect(link(res, 'previous')).not.toContain('_offset');
    expect(link(res, 'next')).toContain('_offset=4');
  });

  it('the first page has no previous link, the last no next link', async () => {
    const p = api.newProject();
    await patients(p, 3);
    const first = await p.get('/Patient?_sort=_id&_count=2');
    expect(link(first, 'previous')).toBeUndefined();
    const last = await p.get('/Patient?_sort=_id&_count=2&_offset=2');
    expect(link(last, 'next')).toBeUndefined();
    expect(matchIds(last)).toHaveLength(1);
  });

  it('10,000 is allowed; above gives 400 invalid saying the maximum', async () => {
    const p = api.newProject();
    const ok = await p.get('/Patient?_offset=10000');
    expect(ok.status).toBe(200);
    const res = await p.get('/Patient?_offset=10001');
    expectInvalid(res, '10000');
  });

  it('links preserve every search parameter', async () => {
    const p = api.newProject();
    await patients(p, 3, () => ({ gender: 'female' }));
    const res = await p.get('/Patient?gender=female&_sort=-_id&_count=1&_total=accurate&_elements=gender');
    for (const relation of ['self', 'first', 'next']) {
      const url = new URL(link(res, relation)!);
      expect(url.searchParams.get('gender')).toBe('female');
      expect(url.searchParams.get('_sort')).toBe('-_id');
      expect(url.searchParams.get('_total')).toBe('accurate');
      expect(url.searchParams.get('_elements')).toBe('gender');
    }
  });

  it('entry.fullUrl is the absolute URL of the resource', async () => {
    const p = api.newProject();
    const [id] = await patients(p, 1);
    const res = await p.get('/Patient');
    expect(res.body.entry[0].fullUrl).toBe(`http://localhost/fhir/R4/Patient/${id}`);
    expect(res.body.type).toBe('searchset');
    expect(res.body.total).toBeUndefined();
  });
});

describe('_sort', () => {
  it('by a string parameter, ascending and descending', async () => {
    const p = api.newProject();
    const [c, a, b] = await patients(p, 3, (i) => ({ name: [{ family: ['Cole', 'Adams', 'Baker'][i] }] }));
    expect(matchIds(await p.get('/Patient?_sort=family'))).toEqual([a, b, c]);
    expect(matchIds(await p.get('/Patient?_sort=-family'))).toEqual([c, b, a]);
  });

  it('by several keys; resources without a value come last', async () => {
    const p = api.newProject();
    const [x, y, z, none] = await patients(p, 4, (i) =>
      i === 3 ? {} : { gender: ['male', 'female', 'male'][i], birthDate: ['1990-01-01', '1980-01-01', '2000-01-01'][i] },
    );
    expect(matchIds(await p.get('/Patient?_sort=gender,-birthdate'))).toEqual([y, z, x, none]);
  });

  it('by date and by _lastUpdated descending', async () => {
    const p = api.newProject();
    const [a, b, c] = await patients(p, 3, (i) => ({ birthDate: ['2001', '1999', '2000'][i] }));
    expect(matchIds(await p.get('/Patient?_sort=birthdate'))).toEqual([b, c, a]);
    expect(matchIds(await p.get('/Patient?_sort=-_lastUpdated'))).toEqual([c, b, a]);
  });

  it('ties are broken by id, so offset pages neither repeat nor skip', async () => {
    const p = api.newProject();
    const ids = await patients(p, 7, () => ({ gender: 'male' }));
    await sameLastUpdated(p);
    const seen = await walk(p, '/Patient?_sort=gender&_count=3');
    expect(seen).toEqual([...ids].sort());
  });

  it('by an unknown parameter gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?_sort=nonsense'), 'nonsense');
  });
});

describe('_cursor', () => {
  it('is offered for _sort=_lastUpdated with _count >= 20 and walks every resource once', async () => {
    const p = api.newProject();
    const ids = await patients(p, 45);
    const first = await p.get('/Patient?_sort=_lastUpdated&_count=20');
    expect(link(first, 'next')).toContain('_cursor=');
    expect(link(first, 'next')).not.toContain('_offset');
    const seen = await walk(p, '/Patient?_sort=_lastUpdated&_count=20');
    expect(seen).toHaveLength(45);
    expect(new Set(seen)).toEqual(new Set(ids));
  });

  it('is not offered below _count=20 or for other sorts: links use _offset', async () => {
    const p = api.newProject();
    await patients(p, 3);
    expect(link(await p.get('/Patient?_sort=_lastUpdated&_count=2'), 'next')).toContain('_offset=2');
    expect(link(await p.get('/Patient?_sort=-_lastUpdated&_count=2'), 'next')).toContain('_offset=2');
  });

  it('is offered without _sort when the search has no filters, and walks every resource once', async () => {
    const p = api.newProject();
    const ids = await patients(p, 45);
    const first = await p.get('/Patient?_count=20');
    expect(link(first, 'next')).toContain('_cursor=');
    expect(link(first, 'next')).not.toContain('_sort');
    const seen = await walk(p, '/Patient?_count=20');
    expect(seen).toHaveLength(45);
    expect(new Set(seen)).toEqual(new Set(ids));
  });

  it('is not offered without _sort when the search has a filter: links use _offset', async () => {
    const p = api.newProject();
    await patients(p, 21, () => ({ gender: 'female' }));
    const next = link(await p.get('/Patient?gender=female&_count=20'), 'next');
    expect(next).toContain('_offset=20');
    expect(next).not.toContain('_cursor');
  });

  it('pages correctly when many resources share one lastUpdated across page boundaries', async () => {
    const p = api.newProject();
    const ids = await patients(p, 50);
    await sameLastUpdated(p);
    const seen = await walk(p, '/Patient?_sort=_lastUpdated&_count=20');
    expect(seen).toEqual([...ids].sort());
  });

  it('has no duplicates and no gaps while new resources are written during the walk', async () => {
    const p = api.newProject();
    const before = await patients(p, 60);
    const added: string[] = [];
    const seen = await walk(p, '/Patient?_sort=_lastUpdated&_count=20', async () => {
      added.push(...(await Promise.all([0, 1, 2].map(() => create(p, { resourceType: 'Patient' })))));
    });
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of before) expect(seen).toContain(id);
    // Resources created during the walk sort after every existing one, so the walk reaches them too.
    expect(seen.length).toBeGreaterThanOrEqual(before.length);
  });

  it('offers previous links in cursor mode that walk back page by page', async () => {
    const p = api.newProject();
    const ids = await patients(p, 50);
    await sameLastUpdated(p);
    const page1 = await p.get('/Patient?_sort=_lastUpdated&_count=20');
    expect(link(page1, 'previous')).toBeUndefined();
    const page2 = await p.get(pathOf(link(page1, 'next')!));
    const page3 = await p.get(pathOf(link(page2, 'next')!));
    expect(link(page3, 'next')).toBeUndefined();
    const back2 = await p.get(pathOf(link(page3, 'previous')!));
    expect(matchIds(back2)).toEqual(matchIds(page2));
    const back1 = await p.get(pathOf(link(back2, 'previous')!));
    expect(matchIds(back1)).toEqual(matchIds(page1));
    expect(link(back1, 'previous')).toBeUndefined();
    expect(matchIds(await p.get(pathOf(link(back1, 'next')!)))).toEqual(matchIds(page2));
    expect([...matchIds(page1), ...matchIds(page2), ...matchIds(page3)]).toEqual([...ids].sort());
  });

  it('keeps the other filters of the search', async () => {
    const p = api.newProject();
    const females = await patients(p, 25, (i) => ({ gender: i % 2 === 0 ? 'female' : 'male' }));
    const expected = females.filter((_, i) => i % 2 === 0);
    const seen = await walk(p, '/Patient?gender=female&_sort=_lastUpdated&_count=20');
    expect(new Set(seen)).toEqual(new Set(expected));
  });

  it('a tampered cursor gives 400', async () => {
    const p = api.newProject();
    await patients(p, 21);
    const next = new URL(link(await p.get('/Patient?_sort=_lastUpdated&_count=20'), 'next')!);
    const cursor = next.searchParams.get('_cursor')!;
    const [payload, mac] = cursor.split('.');
    const data = JSON.parse(Buffer.from(payload, 'base64url').toString());
    data[3] = '00000000';
    const forged = `${Buffer.from(JSON.stringify(data)).toString('base64url')}.${mac}`;
    expectInvalid(await p.get(`/Patient?_sort=_lastUpdated&_count=20&_cursor=${forged}`), '_cursor');
    expectInvalid(await p.get('/Patient?_sort=_lastUpdated&_count=20&_cursor=garbage'), '_cursor');
  });

  it('a cursor on an incompatible search gives 400', async () => {
    const p = api.newProject();
    await patients(p, 21);
    const next = new URL(link(await p.get('/Patient?_sort=_lastUpdated&_count=20'), 'next')!);
    const cursor = next.searchParams.get('_cursor')!;
    expectInvalid(await p.get(`/Patient?_sort=-_lastUpdated&_count=20&_cursor=${cursor}`), '_cursor');
    expectInvalid(await p.get(`/Patient?_sort=_lastUpdated&_count=10&_cursor=${cursor}`), '_cursor');
    expectInvalid(await p.get(`/Patient?gender=male&_sort=_lastUpdated&_count=20&_cursor=${cursor}`), 'different search');
    expectInvalid(await p.get(`/Patient?_sort=_lastUpdated&_count=20&_offset=20&_cursor=${cursor}`), '_cursor');
  });
});
