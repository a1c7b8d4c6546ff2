import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { create, includeRefs, link, matchesOfEveryPage, matchIds, pathOf, sorted } from './helpers.js';

/**
 * A super admin's search without one `_project` reads each project's page through its
 * project-first indexes and merges them (pages/every-project.ts). These pin that the merge keeps
 * the search's order, paging, cursors, totals and includes across projects. Every test tags its
 * resources: the super admin sees the other tests' projects too.
 */
const api = await useTestServer();
const TAG_SYSTEM = 'urn:flint-test:every-project';

function tagged(tag: string, resource: Record<string, unknown>): Record<string, unknown> {
  return { ...resource, meta: { tag: [{ system: TAG_SYSTEM, code: tag }] } };
}

/** Creates `count` Patients with the tag, alternating between the projects, one after another; their ids in that order. */
async function alternate(projects: ProjectClient[], tag: string, count: number, extra: (i: number) => Record<string, unknown> = () => ({})) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(await create(projects[i % projects.length], tagged(tag, { resourceType: 'Patient', ...extra(i) })));
  }
  return ids;
}

describe("a super admin's search of every project", () => {
  it('orders the matches of every project as one list', async () => {
    const tag = randomUUID();
    const projects = [api.newProject(), api.newProject()];
    const years = [1990, 1950, 1970, 1960, 1980, 2000];
    const ids = await alternate(projects, tag, years.length, (i) => ({ birthDate: `${years[i]}-01-01` }));
    const byYear = years.map((year, i) => ({ year, id: ids[i] })).sort((a, b) => a.year - b.year).map((p) => p.id);
    const res = await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_sort=birthdate`);
    expect(matchIds(res)).toEqual(byYear);
    expect(matchIds(await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_sort=-birthdate`))).toEqual([...byYear].reverse());
  });

  it('pages by offset through the matches of every project, each once', async () => {
    const tag = randomUUID();
    const ids = await alternate([api.newProject(), api.newProject()], tag, 7);
    const pages = await matchesOfEveryPage(api.superAdmin, `/Patient?_tag=${TAG_SYSTEM}|${tag}&_sort=-_lastUpdated&_count=2`);
    expect(pages).toEqual([...ids].reverse());
  });

  it('pages by offset through the matches of every project in the order of a date parameter, each once', async () => {
    const tag = randomUUID();
    const years = [1971, 1944, 1999, 1958, 1966, 1987, 1950];
    const ids = await alternate([api.newProject(), api.newProject(), api.newProject()], tag, years.length, (i) => ({ birthDate: `${years[i]}-06-01` }));
    const byYearDescending = years.map((year, i) => ({ year, id: ids[i] })).sort((a, b) => b.year - a.year).map((p) => p.id);
    const pages = await matchesOfEveryPage(api.superAdmin, `/Patient?_tag=${TAG_SYSTEM}|${tag}&_sort=-birthdate&_count=2`);
    expect(pages).toEqual(byYearDescending);
  });

  it('walks the matches of every project by cursor, forwards and back', async () => {
    const tag = randomUUID();
    const ids = await alternate([api.newProject(), api.newProject()], tag, 25);
    const first = await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_sort=_lastUpdated&_count=20`);
    expect(matchIds(first)).toEqual(ids.slice(0, 20));
    const second = await api.superAdmin.get(pathOf(link(first, 'next')!));
    expect(matchIds(second)).toEqual(ids.slice(20));
    expect(link(second, 'next')).toBeUndefined();
    const back = await api.superAdmin.get(pathOf(link(second, 'previous')!));
    expect(matchIds(back)).toEqual(ids.slice(0, 20));
  });

  it('counts the matches of every project', async () => {
    const tag = randomUUID();
    await alternate([api.newProject(), api.newProject()], tag, 5);
    const res = await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_count=2&_total=accurate`);
    expect(matchIds(res)).toHaveLength(2);
    expect(res.body.total).toBe(5);
  });

  it("includes each match's references from the match's own project", async () => {
    const tag = randomUUID();
    const [a, b] = [api.newProject(), api.newProject()];
    const patientA = await create(a, { resourceType: 'Patient' });
    const patientB = await create(b, { resourceType: 'Patient' });
    const observation = (subject: string) => tagged(tag, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${subject}` } });
    const inA = await create(a, observation(patientA));
    const inB = await create(b, observation(patientB));
    const res = await api.superAdmin.get(`/Observation?_tag=${TAG_SYSTEM}|${tag}&_include=Observation:subject&_sort=_lastUpdated`);
    expect(matchIds(res)).toEqual([inA, inB]);
    expect(includeRefs(res)).toEqual(sorted(`Patient/${patientA}`, `Patient/${patientB}`));
  });

  it('reads only the projects _project names when it names several', async () => {
    const tag = randomUUID();
    const [a, b, c] = [api.newProject(), api.newProject(), api.newProject()];
    const ids = await alternate([a, b, c], tag, 6);
    const res = await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_project=${a.projectId},${c.projectId}`);
    expect(matchIds(res).sort()).toEqual(sorted(ids[0], ids[2], ids[3], ids[5]));
  });

  it('counts the matches of only the projects _project names', async () => {
    const tag = randomUUID();
    const [a, b, c] = [api.newProject(), api.newProject(), api.newProject()];
    await alternate([a, b, c], tag, 6);
    const res = await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_project=${a.projectId},${c.projectId}&_count=2&_total=accurate`);
    expect(matchIds(res)).toHaveLength(2);
    expect(res.body.total).toBe(4);
  });

  it('counts no match when two _project parameters name no project in common', async () => {
    const tag = randomUUID();
    const [a, b] = [api.newProject(), api.newProject()];
    await alternate([a, b], tag, 4);
    const res = await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}&_project=${a.projectId}&_project=${b.projectId}&_summary=count`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(0);
  });

  it('orders the matches of several types of every project as one list (system search)', async () => {
    const tag = randomUUID();
    const [a, b] = [api.newProject(), api.newProject()];
    const ids = [
      await create(a, tagged(tag, { resourceType: 'Patient' })),
      await create(b, tagged(tag, { resourceType: 'Observation', status: 'final', code: { text: 'x' } })),
      await create(b, tagged(tag, { resourceType: 'Patient' })),
      await create(a, tagged(tag, { resourceType: 'Observation', status: 'final', code: { text: 'x' } })),
    ];
    const path = `?_type=Patient,Observation&_tag=${TAG_SYSTEM}|${tag}&_sort=-_lastUpdated&_count=3`;
    expect(await matchesOfEveryPage(api.superAdmin, path)).toEqual([...ids].reverse());
  });

  it('finds the matches of every project without _sort', async () => {
    const tag = randomUUID();
    const ids = await alternate([api.newProject(), api.newProject()], tag, 4);
    expect(matchIds(await api.superAdmin.get(`/Patient?_tag=${TAG_SYSTEM}|${tag}`)).sort()).toEqual(sorted(...ids));
  });
});
