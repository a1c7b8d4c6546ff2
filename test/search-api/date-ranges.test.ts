import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, matchesOfEveryPage, matchIds, sorted } from './helpers.js';

/**
 * `p=ge<A>&p=le<B>` on a date parameter: the search adds an index-friendly condition for the pair
 * (query/conditions/date-range.ts, dateRangeCondition) and counts such searches from the index tables
 * (exact-count.ts, countDateRange). These pin the FHIR semantics both must keep: each bound may be
 * met by a different value of the resource, and a single value meets both when it overlaps.
 */
const api = await useTestServer();

/** A Goal whose `target-date` parameter has one value per due date (Goal.target is 0..*). */
function goal(...dueDates: string[]) {
  return {
    resourceType: 'Goal',
    lifecycleStatus: 'active',
    description: { text: 'walk more' },
    subject: { reference: 'Patient/p1' },
    target: dueDates.map((dueDate) => ({ dueDate })),
  };
}

function encounter(start?: string, end?: string) {
  return { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, period: { ...(start ? { start } : {}), ...(end ? { end } : {}) } };
}

/** The matches of a search and its exact count, which must agree. */
async function matchesAndCount(p: ProjectClient, query: string): Promise<{ ids: string[]; count: number }> {
  const ids = await found(p, `${query}&_count=100`);
  const counted = await p.get(`${query}&_summary=count`);
  expect(counted.status, counted.text).toBe(200);
  return { ids, count: counted.body.total };
}

describe('date ranges with several values per resource', () => {
  it('a resource matches when one value meets the lower bound and another the upper bound', async () => {
    const p = api.newProject();
    const spread = await create(p, goal('2022-06-01', '2024-06-01'));
    await create(p, goal('2022-06-01'));
    await create(p, goal('2024-06-01'));
    const { ids, count } = await matchesAndCount(p, '/Goal?target-date=ge2023-01-01&target-date=le2023-12-31');
    expect(ids).toEqual([spread]);
    expect(count).toBe(1);
  });

  it('a resource with several values inside the range is found and counted once', async () => {
    const p = api.newProject();
    const inside = await create(p, goal('2023-02-01', '2023-03-01', '2023-04-01'));
    const mixed = await create(p, goal('2021-01-01', '2023-05-05'));
    await create(p, goal('2021-01-01', '2021-02-01'));
    const { ids, count } = await matchesAndCount(p, '/Goal?target-date=ge2023-01-01&target-date=le2023-12-31');
    expect(ids).toEqual(sorted(inside, mixed));
    expect(count).toBe(2);
  });

  it('gt and lt bounds compare strictly, value by value', async () => {
    const p = api.newProject();
    const spread = await create(p, goal('2023-01-01', '2023-12-31'));
    await create(p, goal('2023-01-01'));
    const { ids, count } = await matchesAndCount(p, '/Goal?target-date=gt2023-06-01&target-date=lt2023-06-01');
    expect(ids).toEqual([spread]);
    expect(count).toBe(1);
  });

  it('a lower bound after the upper bound matches values on both sides of the gap', async () => {
    const p = api.newProject();
    const both = await create(p, goal('2022-01-01', '2025-01-01'));
    await create(p, goal('2025-01-01'));
    const { ids, count } = await matchesAndCount(p, '/Goal?target-date=ge2024-01-01&target-date=le2023-01-01');
    expect(ids).toEqual([both]);
    expect(count).toBe(1);
  });
});

describe('date ranges with one value per resource', () => {
  it('finds periods inside and spanning the range, not those outside', async () => {
    const p = api.newProject();
    const inside = await create(p, encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'));
    // ge asks for a value ending after the day or lying within it (search.html): this one does neither.
    await create(p, encounter('2023-02-28T22:00:00Z', '2023-03-01T01:00:00Z'));
    const spans = await create(p, encounter('2022-01-01', '2024-01-01'));
    const openEnded = await create(p, encounter('2023-01-01'));
    await create(p, encounter('2023-03-02T00:00:00Z', '2023-03-03T00:00:00Z'));
    await create(p, encounter('2023-02-01', '2023-02-27'));
    const { ids, count } = await matchesAndCount(p, '/Encounter?date=ge2023-03-01&date=le2023-03-01');
    expect(ids).toEqual(sorted(inside, spans, openEnded));
    expect(count).toBe(3);
  });

  it('a lower bound after the upper bound matches a single period containing both', async () => {
    const p = api.newProject();
    const long = await create(p, encounter('2022-01-01', '2025-12-31'));
    await create(p, encounter('2023-06-01', '2023-07-01'));
    const { ids, count } = await matchesAndCount(p, '/Encounter?date=ge2024-01-01&date=le2023-01-01');
    expect(ids).toEqual([long]);
    expect(count).toBe(1);
  });

  it('the pair combines with other parameters in matches and counts', async () => {
    const p = api.newProject();
    const wanted = await create(p, { ...encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'), status: 'finished' });
    await create(p, { ...encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'), status: 'cancelled' });
    await create(p, { ...encounter('2023-05-01', '2023-05-02'), status: 'finished' });
    const { ids, count } = await matchesAndCount(p, '/Encounter?status=finished&date=ge2023-03-01&date=le2023-03-01');
    expect(ids).toEqual([wanted]);
    expect(count).toBe(1);
  });
});

describe('pages of a date range search without _sort', () => {
  it('list resources with one value and with several values once each across pages', async () => {
    const p = api.newProject();
    const wanted: string[] = [];
    for (let i = 0; i < 3; i++) wanted.push(await create(p, goal(`2023-05-0${i + 1}`)));
    for (let i = 0; i < 2; i++) wanted.push(await create(p, goal('2023-02-01', '2023-03-01', `2021-01-0${i + 1}`)));
    await create(p, goal('2021-05-01'));
    await create(p, goal('2021-05-01', '2021-06-01'));
    const seen = await matchesOfEveryPage(p, '/Goal?target-date=ge2023-01-01&target-date=le2023-12-31&_count=2');
    expect(sorted(...seen)).toEqual(sorted(...wanted));
  });

  it('keep to the project a super admin names with _project', async () => {
    const p = api.newProject();
    const other = api.newProject();
    const mine = await create(p, encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'));
    await create(other, encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'));
    const res = await api.superAdmin.get(`/Encounter?date=ge2023-03-01&date=le2023-03-01&_project=${p.projectId}`);
    expect(matchIds(res)).toEqual([mine]);
  });

  it('leave out deleted resources', async () => {
    const p = api.newProject();
    const kept = await create(p, encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'));
    const deleted = await create(p, encounter('2023-03-01T12:00:00Z', '2023-03-01T13:00:00Z'));
    expect((await p.delete(`/Encounter/${deleted}`)).status).toBe(200);
    expect(await found(p, '/Encounter?date=ge2023-03-01&date=le2023-03-01')).toEqual([kept]);
  });
});

describe('pages of a search by one date bound alone', () => {
  it('find open periods, values on the bound and resources with several values, each once across pages', async () => {
    const p = api.newProject();
    const wanted = [
      await create(p, encounter('2023-03-01T10:00:00Z')),
      await create(p, encounter('2021-01-01T10:00:00Z', '2023-01-02T00:00:00Z')),
      await create(p, encounter('2023-06-01T10:00:00Z', '2023-06-01T11:00:00Z')),
    ];
    await create(p, encounter('2021-03-01T10:00:00Z', '2021-03-01T11:00:00Z'));
    await create(p, encounter(undefined, '2022-12-31T10:00:00Z'));
    const many = [await create(p, goal('2021-01-01', '2024-01-01')), await create(p, goal('2024-02-01', '2024-03-01'))];
    await create(p, goal('2021-01-01', '2022-01-01'));
    expect(sorted(...(await matchesOfEveryPage(p, '/Encounter?date=gt2023-01-01&_count=2')))).toEqual(sorted(...wanted));
    expect(sorted(...(await matchesOfEveryPage(p, '/Goal?target-date=ge2023-01-01&_count=1')))).toEqual(sorted(...many));
  });

  it('find periods without a start for an upper bound', async () => {
    const p = api.newProject();
    const noStart = await create(p, encounter(undefined, '2020-06-01T10:00:00Z'));
    const early = await create(p, encounter('2019-06-01T10:00:00Z', '2019-06-01T11:00:00Z'));
    await create(p, encounter('2021-06-01T10:00:00Z', '2021-06-01T11:00:00Z'));
    expect(await found(p, '/Encounter?date=lt2021-01-01')).toEqual(sorted(noStart, early));
  });
});

describe('pages of a search by one date without prefix (eq)', () => {
  it('find the periods and values within the day, each once across pages, not those that only overlap it', async () => {
    const p = api.newProject();
    const within = [
      await create(p, encounter('2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z')),
      await create(p, encounter('2023-03-01T00:00:00Z', '2023-03-01T23:59:59Z')),
      await create(p, encounter('2023-03-01T18:00:00Z', '2023-03-01T18:30:00Z')),
    ];
    await create(p, encounter('2023-02-28T22:00:00Z', '2023-03-01T02:00:00Z'));
    await create(p, encounter('2023-03-01T10:00:00Z'));
    await create(p, encounter('2023-03-02T10:00:00Z', '2023-03-02T11:00:00Z'));
    const several = await create(p, goal('2021-01-01', '2023-03-01'));
    await create(p, goal('2023-02-28', '2023-03-02'));
    expect(sorted(...(await matchesOfEveryPage(p, '/Encounter?date=2023-03-01&_count=2')))).toEqual(sorted(...within));
    expect(await found(p, '/Goal?target-date=eq2023-03-01')).toEqual([several]);
  });

  it('count the periods within the day, and find the patients who have one through _has', async () => {
    const p = api.newProject();
    const [ann, bob] = [await create(p, { resourceType: 'Patient', name: [{ family: 'Ann' }] }), await create(p, { resourceType: 'Patient', name: [{ family: 'Bob' }] })];
    const visit = (patient: string, start: string, end: string) => ({ ...encounter(start, end), subject: { reference: `Patient/${patient}` } });
    await create(p, visit(ann, '2023-03-01T10:00:00Z', '2023-03-01T11:00:00Z'));
    await create(p, visit(ann, '2023-03-01T12:00:00Z', '2023-03-01T13:00:00Z'));
    await create(p, visit(bob, '2023-02-28T22:00:00Z', '2023-03-01T02:00:00Z'));
    const counted = await p.get('/Encounter?date=2023-03-01&_summary=count');
    expect(counted.body.total).toBe(2);
    expect(await found(p, '/Patient?_has:Encounter:subject:date=2023-03-01')).toEqual([ann]);
  });
});
