import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, matchesOfEveryPage, sorted } from './helpers.js';

/**
 * Searches with `_has` (`Patient?_has:Observation:subject:code=x`): probed per patient, or read
 * from the referencing Observations' rows when they are few (pages/has-driven.ts), in one project
 * or, for a super admin, in every project. Each test's code is its own.
 */
const api = await useTestServer();

function code(): string {
  return `has-${randomUUID().slice(0, 12)}`;
}

async function patient(client: ProjectClient, family: string, gender = 'female'): Promise<string> {
  return create(client, { resourceType: 'Patient', name: [{ family }], gender });
}

async function observation(client: ProjectClient, subject: string, value: string): Promise<string> {
  return create(client, { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'urn:has', code: value }] }, subject: { reference: `Patient/${subject}` } });
}

describe('a search by _has', () => {
  it("finds a super admin's matches in every project, and a member's in its own", async () => {
    const value = code();
    const [a, b] = [api.newProject(), api.newProject()];
    const [pa, pb] = [await patient(a, 'Hasa'), await patient(b, 'Hasb')];
    await observation(a, pa, value);
    await observation(a, pa, value);
    await observation(b, pb, value);
    await observation(a, await patient(a, 'Hasc'), code());
    expect(await found(api.superAdmin, `/Patient?_has:Observation:subject:code=urn:has|${value}`)).toEqual(sorted(pa, pb));
    expect(await found(a, `/Patient?_has:Observation:subject:code=urn:has|${value}`)).toEqual([pa]);
  });

  it('leaves out a deleted Observation, a deleted patient, and patients the other filters drop', async () => {
    const value = code();
    const p = api.newProject();
    const [kept, male, gone, unreferenced] = [await patient(p, 'Hasd'), await patient(p, 'Hasd', 'male'), await patient(p, 'Hasd'), await patient(p, 'Hasd')];
    await observation(p, kept, value);
    await observation(p, male, value);
    await observation(p, gone, value);
    const deleted = await observation(p, unreferenced, value);
    expect((await p.delete(`/Observation/${deleted}`)).status).toBe(200);
    expect((await p.delete(`/Patient/${gone}`)).status).toBe(200);
    expect(await found(p, `/Patient?_has:Observation:subject:code=urn:has|${value}&gender=female`)).toEqual([kept]);
  });

  it('pages in family order and counts the matches exactly', async () => {
    const value = code();
    const p = api.newProject();
    const ids: string[] = [];
    for (const family of ['Hase', 'Hasf', 'Hasg', 'Hash', 'Hasi']) ids.push(await patient(p, family));
    for (const id of [...ids].reverse()) await observation(p, id, value);
    await patient(p, 'Hasa');
    expect(await matchesOfEveryPage(p, `/Patient?_has:Observation:subject:code=urn:has|${value}&_sort=family&_count=2`)).toEqual(ids);
    const counted = await p.get(`/Patient?_has:Observation:subject:code=urn:has|${value}&_total=accurate&_count=1`);
    expect(counted.body.total).toBe(5);
  });

  it("tests a condition on the referencing resource's own row (_lastUpdated)", async () => {
    const p = api.newProject();
    const subject = await patient(p, 'Hasj');
    await observation(p, subject, code());
    await patient(p, 'Hasj');
    expect(await found(p, '/Patient?_has:Observation:subject:_lastUpdated=gt2000-01-01&name=hasj')).toEqual([subject]);
    expect(await found(p, '/Patient?_has:Observation:subject:_lastUpdated=lt2000-01-01&name=hasj')).toEqual([]);
  });
});
