import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { create, matchesOfEveryPage } from './helpers.js';

/**
 * A super admin's search of every project sorted by a date or string parameter, with filters that
 * most of the first rows meet: the page is read from the merged first rows of every project's sort
 * rows, the filters probed on them in order (pages/every-project-heads.ts), and must be the page
 * the general statement would give. Each test's resources carry a tag of their own and sort
 * before every other test's (dates in a far year, family names after every other), so that its
 * filters are common among the first rows.
 */
const api = await useTestServer();
const TAG_SYSTEM = 'urn:flint-test:every-project-common';

/** A year of its own for a test, far from every other test's dates: late (9000s) or early (1000s). */
function farYear(late: boolean): number {
  return (late ? 9000 : 1000) + Math.floor(Math.random() * 999);
}

function observation(tag: string, date: string | undefined, status: string): Record<string, unknown> {
  return {
    resourceType: 'Observation',
    status,
    code: { coding: [{ system: TAG_SYSTEM, code: 'any' }] },
    meta: { tag: [{ system: TAG_SYSTEM, code: tag }] },
    ...(date ? { effectiveDateTime: date } : {}),
  };
}

/** The ids of `made` that are final, ordered by date (descending or not), ties by id, those without a date last. */
function expectedOrder(made: { id: string; date: string | undefined; final: boolean }[], descending: boolean): string[] {
  const dated = made.filter((m) => m.final && m.date).sort((x, y) => (x.date === y.date ? (x.id < y.id ? -1 : 1) : (x.date! < y.date!) === descending ? 1 : -1));
  const undated = made.filter((m) => m.final && !m.date).sort((x, y) => (x.id < y.id ? -1 : 1));
  return [...dated, ...undated].map((m) => m.id);
}

/** Creates the Observations of `plan` (project, day, final), in turn; what was made. */
async function make(tag: string, year: number, plan: [ProjectClient, number | undefined, boolean][]): Promise<{ id: string; date: string | undefined; final: boolean }[]> {
  const made = [];
  for (const [project, day, final] of plan) {
    const date = day === undefined ? undefined : `${year}-05-${String(day).padStart(2, '0')}`;
    made.push({ id: await create(project, observation(tag, date, final ? 'final' : 'preliminary')), date, final });
  }
  return made;
}

describe("a super admin's sorted search of every project with a filter most rows meet", () => {
  it('pages through every project in date order, a project whose latest rows fail the filter included, matches without a date last', async () => {
    const tag = randomUUID();
    const [a, b, c] = [api.newProject(), api.newProject(), api.newProject()];
    // Project a holds the latest dates, two of them not final; b and c interleave below it.
    const made = await make(tag, farYear(true), [
      [a, 28, false], [a, 27, true], [a, 26, false], [a, 25, true], [a, 24, true], [a, 23, true],
      [b, 22, true], [c, 21, true], [b, 20, false], [c, 19, true], [b, 18, true], [c, 17, true],
      [b, undefined, true], [c, 16, true], [a, 2, true],
    ]);
    const query = `/Observation?_tag=${TAG_SYSTEM}|${tag}&status=final&_sort=-date`;
    expect(await matchesOfEveryPage(api.superAdmin, `${query}&_count=3`)).toEqual(expectedOrder(made, true));
    expect(await matchesOfEveryPage(api.superAdmin, `${query}&_count=5`)).toEqual(expectedOrder(made, true));
  });

  it('pages in ascending date order, ties across projects broken by id', async () => {
    const tag = randomUUID();
    const [a, b, c] = [api.newProject(), api.newProject(), api.newProject()];
    const made = await make(tag, farYear(false), [
      [a, 3, true], [b, 3, true], [c, 3, true], [a, 3, false], [b, 3, true], [c, 4, true], [a, 5, true], [b, 6, true], [c, 1, false],
    ]);
    const query = `/Observation?_tag=${TAG_SYSTEM}|${tag}&status=final&_sort=date`;
    expect(await matchesOfEveryPage(api.superAdmin, `${query}&_count=2`)).toEqual(expectedOrder(made, false));
  });

  it('pages by a string parameter descending, a family that fills the first rows of a project included', async () => {
    const tag = randomUUID();
    const [a, b, c] = [api.newProject(), api.newProject(), api.newProject()];
    const patient = (family: string, gender: string) => ({ resourceType: 'Patient', gender, meta: { tag: [{ system: TAG_SYSTEM, code: tag }] }, name: [{ family }] });
    const high = `zzzz${randomUUID().slice(0, 8)}`;
    const made: { id: string; family: string; female: boolean }[] = [];
    // Project a's first rows are all of one family (more of them than its first rows read); b and c have a few rows each.
    const plan: [ProjectClient, string, boolean][] = [
      [a, `${high}y`, true], [a, `${high}y`, true], [a, `${high}y`, false], [a, `${high}y`, true], [a, `${high}y`, true], [a, `${high}y`, true],
      [b, `${high}z`, false], [b, `${high}x`, true], [b, `${high}x`, true], [c, `${high}w`, true], [c, `${high}w`, true], [c, `${high}w`, true],
    ];
    for (const [project, family, female] of plan) made.push({ id: await create(project, patient(family, female ? 'female' : 'male')), family, female });
    const expected = made
      .filter((m) => m.female)
      .sort((x, y) => (x.family === y.family ? (x.id < y.id ? -1 : 1) : x.family < y.family ? 1 : -1))
      .map((m) => m.id);
    const query = `/Patient?_tag=${TAG_SYSTEM}|${tag}&gender=female&_sort=-family`;
    expect(await matchesOfEveryPage(api.superAdmin, `${query}&_count=1`)).toEqual(expected);
    expect(await matchesOfEveryPage(api.superAdmin, `${query}&_count=2`)).toEqual(expected);
  });
});
