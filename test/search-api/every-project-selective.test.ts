import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { create, matchesOfEveryPage, matchIds } from './helpers.js';

/**
 * A super admin's search of every project sorted by a date or string parameter, whose token code
 * has few rows in each project: the page is read from the code's rows (pages/every-project-codes.ts)
 * and must be the page the general statement would give. Each test's code is its own.
 */
const api = await useTestServer();
const SYSTEM = 'urn:flint-test:every-project-selective';
const TAG_SYSTEM = 'urn:flint-test:every-project-selective-tag';

function observation(code: string, date: string | undefined, status = 'final'): Record<string, unknown> {
  return {
    resourceType: 'Observation',
    status,
    code: { coding: [{ system: SYSTEM, code }] },
    meta: { tag: [{ system: TAG_SYSTEM, code }] },
    ...(date ? { effectiveDateTime: date } : {}),
  };
}

/** Creates one Observation per date, in turn in each project; their ids in that order. */
async function spread(projects: ProjectClient[], code: string, dates: (string | undefined)[], status?: (i: number) => string): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, date] of dates.entries()) ids.push(await create(projects[i % projects.length], observation(code, date, status?.(i))));
  return ids;
}

describe("a super admin's sorted search of every project by a code with few rows", () => {
  it('lists the matches without a value of the sort parameter last, whichever filter drives the page', async () => {
    const code = randomUUID();
    const [a, b] = [api.newProject(), api.newProject()];
    const ids = await spread([a, a, b], code, ['2020-01-01', undefined, '2021-01-01']);
    const byCode = await api.superAdmin.get(`/Observation?code=${SYSTEM}|${code}&_sort=-date`);
    expect(matchIds(byCode)).toEqual([ids[2], ids[0], ids[1]]);
    const byTag = await api.superAdmin.get(`/Observation?_tag=${TAG_SYSTEM}|${code}&_sort=-date`);
    expect(matchIds(byTag)).toEqual([ids[2], ids[0], ids[1]]);
  });

  it('pages through every project in date order, the other filters tested, each match once', async () => {
    const code = randomUUID();
    const projects = [api.newProject(), api.newProject(), api.newProject()];
    const days = [12, 3, 27, 8, 19, 1, 30, 15, 22, 5];
    const ids = await spread(projects, code, days.map((d) => `2022-03-${String(d).padStart(2, '0')}`), (i) => (i % 4 === 3 ? 'preliminary' : 'final'));
    const finals = days.map((day, i) => ({ day, id: ids[i], final: i % 4 !== 3 })).filter((m) => m.final);
    const descending = finals.sort((x, y) => y.day - x.day).map((m) => m.id);
    expect(await matchesOfEveryPage(api.superAdmin, `/Observation?code=${SYSTEM}|${code}&status=final&_sort=-date&_count=3`)).toEqual(descending);
    expect(await matchesOfEveryPage(api.superAdmin, `/Observation?code=${SYSTEM}|${code}&status=final&_sort=date&_count=2`)).toEqual([...descending].reverse());
  });

  it('breaks ties of the sort value by id across projects', async () => {
    const code = randomUUID();
    const ids = await spread([api.newProject(), api.newProject(), api.newProject()], code, Array(5).fill('2023-07-04T10:00:00Z'));
    const res = await api.superAdmin.get(`/Observation?code=${SYSTEM}|${code}&_sort=-date&_count=3&_offset=1`);
    expect(matchIds(res)).toEqual([...ids].sort().slice(1, 4));
  });

  it('orders by a string parameter as the string index does (case aside), Patients without it last', async () => {
    const code = randomUUID();
    const [a, b] = [api.newProject(), api.newProject()];
    const patient = (family?: string) => ({ resourceType: 'Patient', identifier: [{ system: SYSTEM, value: code }], ...(family ? { name: [{ family }] } : {}) });
    const zeta = await create(a, patient('Zeta'));
    const none = await create(b, patient());
    const alpha = await create(b, patient('alpha'));
    const beta = await create(a, patient('Beta'));
    const res = await api.superAdmin.get(`/Patient?identifier=${SYSTEM}|${code}&_sort=family`);
    expect(matchIds(res)).toEqual([alpha, beta, zeta, none]);
  });
});
