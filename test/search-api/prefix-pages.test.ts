import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found, matchesOfEveryPage, matchIds } from './helpers.js';

/**
 * A resource has one string index row per name part, so several rows of one resource may match a
 * prefix: it is still one match, on every page and in the total.
 */
const api = await useTestServer();

const patient = (family: string, ...given: string[]) => ({ resourceType: 'Patient', name: [{ family, ...(given.length > 0 && { given }) }] });

describe('a search by one string prefix', () => {
  it('lists a resource matching in several name parts once', async () => {
    const p = api.newProject();
    const id = await create(p, patient('Smith', 'Smitty', 'Smithson'));
    expect(matchIds(await p.get('/Patient?name=smi'))).toEqual([id]);
  });

  it('lists every match exactly once across its pages', async () => {
    const p = api.newProject();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await create(p, patient(`Smith${i}`, `Smitty${i}`)));
    await create(p, patient('Jones', 'Sam'));
    const seen = await matchesOfEveryPage(p, '/Patient?name=smi&_count=3');
    expect(seen).toHaveLength(7);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  it('counts resources, not matching name parts', async () => {
    const p = api.newProject();
    await create(p, patient('Smith', 'Smitty'));
    await create(p, patient('Smithers'));
    const res = await p.get('/Patient?name=smi&_total=accurate&_count=1');
    expect(res.body.total).toBe(2);
    expect(matchIds(res)).toHaveLength(1);
  });

  it('leaves out deleted resources and other projects', async () => {
    const p = api.newProject();
    const other = api.newProject();
    const kept = await create(p, patient('Smith'));
    const deleted = await create(p, patient('Smithers'));
    await create(other, patient('Smithson'));
    expect((await p.delete(`/Patient/${deleted}`)).status).toBe(200);
    expect(await found(p, '/Patient?name=smi')).toEqual([kept]);
  });
});

describe('the order of a string prefix search without _sort', () => {
  it('lists resources by their first matching value, then id', async () => {
    const p = api.newProject();
    const smitty = await create(p, patient('Smitty'));
    const smith = await create(p, patient('Smith'));
    const byGiven = await create(p, patient('Jones', 'Smia'));
    const smithers = await create(p, patient('Smithers', 'Smiz'));
    expect(matchIds(await p.get('/Patient?name=smi'))).toEqual([byGiven, smith, smithers, smitty]);
  });

  it('is the same for a super admin naming the project with _project', async () => {
    const p = api.newProject();
    const other = api.newProject();
    const smitty = await create(p, patient('Smitty'));
    const smith = await create(p, patient('Smith'));
    const smia = await create(p, patient('Smia'));
    const smik = await create(p, patient('Smik'));
    await create(other, patient('Smib'));
    expect(matchIds(await api.superAdmin.get(`/Patient?name=smi&_project=${p.projectId}`))).toEqual([smia, smik, smith, smitty]);
  });

  it('breaks ties between equal values by id', async () => {
    const p = api.newProject();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await create(p, patient('Smith')));
    expect(matchIds(await p.get('/Patient?name=smi'))).toEqual([...ids].sort());
  });

  it('keeps the order of the first page on later pages', async () => {
    const p = api.newProject();
    for (let i = 0; i < 9; i++) await create(p, patient(i % 2 === 0 ? 'Smith' : `Smi${9 - i}`));
    const whole = matchIds(await p.get('/Patient?name=smi&_count=20'));
    const pages = [];
    for (let offset = 0; offset < 9; offset += 4) pages.push(...matchIds(await p.get(`/Patient?name=smi&_count=4&_offset=${offset}`)));
    expect(pages).toEqual(whole);
  });

  it('finds every match when other filters leave few of the first hundred matching values', async () => {
    const p = api.newProject();
    const female: string[] = [];
    const batch = (n: number, family: string, gender: string) =>
      Promise.all(Array.from({ length: n }, () => create(p, { ...patient(family), gender })));
    // "smia" comes before "smith": the first 120 index rows of "smi" are of men.
    for (let i = 0; i < 6; i++) await batch(20, 'Smia', 'male');
    female.push(...(await batch(3, 'Smith', 'female')));
    const seen = await matchesOfEveryPage(p, '/Patient?name=smi&gender=female&_count=2');
    expect([...seen].sort()).toEqual([...female].sort());
  });
});
