import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { create, createInBatches, matchesByOffset as pagesOf, matchIds } from './helpers.js';

/**
 * A search in one project sorted by one date parameter reads its page from the parameter's rows in
 * the page's order (pages/sorted-window.ts, growing-windows.ts), falling back to the general statement when those
 * rows fall short. These pin the order that must come out either way: values, Periods, ties,
 * resources without a value, filters, paging and isolation.
 */
const api = await useTestServer();

function observation(code: string, effective: Record<string, unknown> = {}) {
  return { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] }, ...effective };
}

/** Creates Observations of `code` on consecutive days from 2020-01-01; their ids by day. */
async function daily(p: ProjectClient, code: string, days: number): Promise<string[]> {
  const dayOf = (i: number) => new Date(Date.UTC(2020, 0, 1 + i)).toISOString().slice(0, 10);
  return createInBatches(p, Array.from({ length: days }, (_, i) => observation(code, { effectiveDateTime: dayOf(i) })));
}

describe('a search sorted by a date parameter', () => {
  it('pages through more matches than the first rows it reads, in order both ways', async () => {
    const p = api.newProject();
    const ids = await daily(p, '8867-4', 130);
    expect(await pagesOf(p, '/Observation?code=8867-4&_sort=-date', 20, 130)).toEqual([...ids].reverse());
    expect(await pagesOf(p, '/Observation?code=8867-4&_sort=date', 20, 130)).toEqual(ids);
  });

  it('keeps only the matches of the filters, even when few of the rows meet them', async () => {
    const p = api.newProject();
    await daily(p, '8867-4', 120);
    const early = await create(p, observation('8480-6', { effectiveDateTime: '2019-05-01' }));
    const late = await create(p, observation('8480-6', { effectiveDateTime: '2025-05-01' }));
    expect(matchIds(await p.get('/Observation?code=8480-6&_sort=-date'))).toEqual([late, early]);
    expect(matchIds(await p.get('/Observation?code=8480-6&_sort=date'))).toEqual([early, late]);
  });

  it('orders a Period by its end descending and by its start ascending', async () => {
    const p = api.newProject();
    const period = await create(p, observation('x', { effectivePeriod: { start: '2020-01-01', end: '2024-01-01' } }));
    const point = await create(p, observation('x', { effectiveDateTime: '2022-01-01' }));
    expect(await pagesOf(p, '/Observation?_sort=-date', 1, 2)).toEqual([period, point]);
    expect(await pagesOf(p, '/Observation?_sort=date', 1, 2)).toEqual([period, point]);
  });

  it('breaks ties by id in both directions', async () => {
    const p = api.newProject();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await create(p, observation('x', { effectiveDateTime: '2022-01-01' })));
    ids.sort();
    expect(await pagesOf(p, '/Observation?_sort=-date', 3, 4)).toEqual(ids);
    expect(await pagesOf(p, '/Observation?_sort=date', 3, 4)).toEqual(ids);
  });

  it('lists resources without a value last', async () => {
    const p = api.newProject();
    const dated = await create(p, observation('x', { effectiveDateTime: '2022-01-01' }));
    const undated = await create(p, observation('x'));
    expect(await pagesOf(p, '/Observation?_sort=-date', 1, 2)).toEqual([dated, undated]);
    expect(await pagesOf(p, '/Observation?_sort=date', 1, 2)).toEqual([dated, undated]);
  });

  it('leaves out deleted resources and other projects', async () => {
    const p = api.newProject();
    const older = await create(p, observation('x', { effectiveDateTime: '2021-01-01' }));
    const kept = await create(p, observation('x', { effectiveDateTime: '2022-01-01' }));
    const deleted = await create(p, observation('x', { effectiveDateTime: '2023-01-01' }));
    await create(api.newProject(), observation('x', { effectiveDateTime: '2024-01-01' }));
    expect((await p.delete(`/Observation/${deleted}`)).status).toBe(200);
    expect(await pagesOf(p, '/Observation?_sort=-date', 1, 3)).toEqual([kept, older]);
  });
});
