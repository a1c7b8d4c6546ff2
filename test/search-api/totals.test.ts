import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, expectInvalid } from './helpers.js';

// A small threshold: `_total=accurate` counts only when the estimate is below 5.
const api = await useTestServer({ ACCURATE_COUNT_THRESHOLD: '5' });

const ACCURACY = 'https://flint.dev/fhir/CodeSystem/search-total';

async function patients(p: ProjectClient, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await create(p, { resourceType: 'Patient', gender: 'female' }));
  return ids;
}

function accuracy(body: any): string | undefined {
  return body.meta?.tag?.find((t: any) => t.system === ACCURACY)?.code;
}

describe('_total', () => {
  it('none (the default) gives no total', async () => {
    const p = api.newProject();
    await patients(p, 2);
    const res = await p.get('/Patient');
    expect(res.body.total).toBeUndefined();
    expect(accuracy(res.body)).toBeUndefined();
    expect((await p.get('/Patient?_total=none')).body.total).toBeUndefined();
  });

  it('accurate under the threshold is an exact count, tagged exact', async () => {
    const p = api.newProject();
    // By _id: the planner estimates one row per id whatever else the database holds (a project's
    // own estimate follows the statistics of every project).
    const ids = await patients(p, 3);
    const res = await p.get(`/Patient?_id=${ids.join(',')}&_total=accurate&_count=1`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(3);
    expect(accuracy(res.body)).toBe('exact');
  });

  it('accurate at or above the threshold returns the estimate, tagged estimate', async () => {
    const p = api.newProject();
    await patients(p, 8);
    const res = await p.get('/Patient?_total=accurate&_count=5');
    expect(res.status).toBe(200);
    expect(accuracy(res.body)).toBe('estimate');
    // Never below what the page proves: 5 entries and a next page.
    expect(res.body.total).toBeGreaterThanOrEqual(6);
  });

  it('estimate gives the planner estimate, tagged estimate, never below what the page shows', async () => {
    const p = api.newProject();
    await patients(p, 4);
    const res = await p.get('/Patient?_total=estimate&_count=2');
    expect(res.status).toBe(200);
    expect(accuracy(res.body)).toBe('estimate');
    expect(Number.isInteger(res.body.total)).toBe(true);
    expect(res.body.total).toBeGreaterThanOrEqual(3);
  });

  it('when the page holds the whole result, the total is exact without counting', async () => {
    const p = api.newProject();
    await patients(p, 2);
    const res = await p.get('/Patient?_total=estimate');
    expect(res.body.total).toBe(2);
    expect(accuracy(res.body)).toBe('exact');
  });

  it('_summary=count returns only the total', async () => {
    const p = api.newProject();
    const ids = await patients(p, 3);
    const res = await p.get(`/Patient?_id=${ids.join(',')}&_summary=count`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(3);
    expect(res.body.entry).toBeUndefined();
  });

  it('an unknown _total value gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?_total=maybe'), '_total');
  });
});
