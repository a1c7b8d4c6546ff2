import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { create, createInBatches, found, matchIds } from './helpers.js';

/**
 * A search without _sort in one project whose only filter is a token code
 * (`Observation?code=http://loinc.org|8867-4`) reads its page from the token index in the index's
 * order (pages/token-code.ts, tokenCodeDriver): by each resource's first matching system, then id. These
 * pin what that must keep: each resource once, the token rules, the order across pages, isolation.
 */
const api = await useTestServer();

function observation(...codings: { system?: string; code: string }[]) {
  return { resourceType: 'Observation', status: 'final', code: { coding: codings } };
}

function withStatus(status: string, resource: Record<string, unknown>) {
  return { ...resource, status };
}

function createMany(p: ProjectClient, n: number, resource: Record<string, unknown>): Promise<string[]> {
  return createInBatches(p, Array.from({ length: n }, () => resource));
}

describe('a search by one token code', () => {
  it('lists a resource with several matching codings once', async () => {
    const p = api.newProject();
    const twice = await create(p, observation({ system: 'http://loinc.org', code: '8867-4' }, { system: 'urn:local', code: '8867-4' }));
    const res = await p.get('/Observation?code=8867-4&_total=accurate');
    expect(matchIds(res)).toEqual([twice]);
    expect(res.body.total).toBe(1);
  });

  it('matches system|code, |code and code as the token rules say', async () => {
    const p = api.newProject();
    const loinc = await create(p, observation({ system: 'http://loinc.org', code: '8867-4' }));
    const local = await create(p, observation({ system: 'urn:local', code: '8867-4' }));
    const none = await create(p, observation({ code: '8867-4' }));
    expect(await found(p, '/Observation?code=http://loinc.org|8867-4')).toEqual([loinc]);
    expect(await found(p, '/Observation?code=|8867-4')).toEqual([none]);
    expect(await found(p, '/Observation?code=8867-4')).toEqual([loinc, local, none].sort());
  });

  it('leaves out deleted resources and other projects', async () => {
    const p = api.newProject();
    const kept = await create(p, observation({ system: 'http://loinc.org', code: '8867-4' }));
    const deleted = await create(p, observation({ system: 'http://loinc.org', code: '8867-4' }));
    await create(api.newProject(), observation({ system: 'http://loinc.org', code: '8867-4' }));
    expect((await p.delete(`/Observation/${deleted}`)).status).toBe(200);
    expect(await found(p, '/Observation?code=http://loinc.org|8867-4')).toEqual([kept]);
  });
});

describe('the order of a token code search without _sort', () => {
  it('lists resources by their first matching system, then id, those without a system last', async () => {
    const p = api.newProject();
    const none = await create(p, observation({ code: 'x' }));
    const b = await create(p, observation({ system: 'urn:b', code: 'x' }));
    const a1 = await create(p, observation({ system: 'urn:a', code: 'x' }));
    const both = await create(p, observation({ system: 'urn:b', code: 'x' }, { system: 'urn:a', code: 'x' }));
    const a = [a1, both].sort();
    expect(matchIds(await p.get('/Observation?code=x'))).toEqual([...a, b, none]);
  });

  it('is the same for a super admin naming the project with _project', async () => {
    const p = api.newProject();
    const ids = (await createMany(p, 4, observation({ system: 'urn:a', code: 'x' }))).sort();
    await create(api.newProject(), observation({ system: 'urn:a', code: 'x' }));
    expect(matchIds(await api.superAdmin.get(`/Observation?code=urn:a|x&_project=${p.projectId}`))).toEqual(ids);
  });

  it('keeps one order across pages when the match is larger than the rows a page reads', async () => {
    const p = api.newProject();
    const ids = (await createMany(p, 130, observation({ system: 'http://loinc.org', code: '8867-4' }))).sort();
    const pages: string[] = [];
    for (let offset = 0; offset < 130; offset += 20) {
      pages.push(...matchIds(await p.get(`/Observation?code=http://loinc.org|8867-4&_count=20&_offset=${offset}`)));
    }
    expect(pages).toEqual(ids);
  });
});

describe('a search by a token code and other filters', () => {
  it('finds the resources that meet the other filters, on every page', async () => {
    const p = api.newProject();
    const final = await createMany(p, 70, observation({ system: 'http://loinc.org', code: '8867-4' }));
    await createMany(p, 70, withStatus('amended', observation({ system: 'http://loinc.org', code: '8867-4' })));
    const pages: string[] = [];
    for (let offset = 0; offset < 70; offset += 20) {
      pages.push(...matchIds(await p.get(`/Observation?code=http://loinc.org|8867-4&status=final&_count=20&_offset=${offset}`)));
    }
    expect(pages).toEqual([...final].sort());
  });

  it('finds the few resources that meet filters most of the code\'s rows do not', async () => {
    const p = api.newProject();
    await createMany(p, 120, observation({ system: 'http://loinc.org', code: '8867-4' }));
    const amended = await createMany(p, 2, withStatus('amended', observation({ system: 'http://loinc.org', code: '8867-4' })));
    expect(await found(p, '/Observation?code=http://loinc.org|8867-4&status=amended')).toEqual([...amended].sort());
  });
});

describe('a search by several token codes', () => {
  it('finds the resources that have every code on every page, whichever code comes first', async () => {
    const p = api.newProject();
    await createMany(p, 110, observation({ system: 'http://loinc.org', code: '8867-4' }));
    const rare = await createMany(p, 7, observation({ system: 'http://loinc.org', code: '2339-0' }));
    await createMany(p, 3, withStatus('amended', observation({ system: 'http://loinc.org', code: '2339-0' })));
    const expected = [...rare].sort();
    for (const query of ['status=final&code=http://loinc.org|2339-0', 'code=http://loinc.org|2339-0&status=final']) {
      const pages: string[] = [];
      for (let offset = 0; offset < 10; offset += 3) pages.push(...matchIds(await p.get(`/Observation?${query}&_count=3&_offset=${offset}`)));
      expect(pages, query).toEqual(expected);
    }
  });

  it('finds nothing when a later code has no rows, and every match when each code is common', async () => {
    const p = api.newProject();
    const all = await createMany(p, 30, observation({ system: 'http://loinc.org', code: '8867-4' }));
    expect(await found(p, '/Observation?status=final&code=http://loinc.org|0000-0')).toEqual([]);
    expect(await found(p, '/Observation?status=final&code=http://loinc.org|8867-4&_count=50')).toEqual([...all].sort());
  });
});
