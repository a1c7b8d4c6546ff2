import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found, matchesOfEveryPage, matchIds, sorted } from './helpers.js';

/**
 * A search in one project with a key filter (a reference to given resources, an identifier) and
 * other filters tests the others on the key's index rows before reading any resource
 * (pages/key-driven.ts, keyDrivenConditions). These pin what that form must keep: each resource once, the
 * other filters of every kind, the ones on the resource itself, sorting, paging and isolation.
 */
const api = await useTestServer();

function observation(subject: string, code: string, extra: Record<string, unknown> = {}) {
  return {
    resourceType: 'Observation',
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code }] },
    subject: { reference: subject },
    ...extra,
  };
}

describe('a key filter with other filters', () => {
  it('finds the resources of the key that meet the other filter, and no others', async () => {
    const p = api.newProject();
    const hit = await create(p, observation('Patient/a', '8867-4'));
    await create(p, observation('Patient/a', '8480-6'));
    await create(p, observation('Patient/b', '8867-4'));
    expect(await found(p, '/Observation?subject=Patient/a&code=http://loinc.org|8867-4')).toEqual([hit]);
  });

  it('lists a resource that references the key several times once', async () => {
    const p = api.newProject();
    const twice = await create(p, observation('Patient/a', '8867-4', { performer: [{ reference: 'Practitioner/x' }, { reference: 'Practitioner/x' }] }));
    const once = await create(p, observation('Patient/b', '8867-4', { performer: [{ reference: 'Practitioner/x' }] }));
    const res = await p.get('/Observation?performer=Practitioner/x&code=8867-4&_total=accurate');
    expect(matchIds(res).sort()).toEqual(sorted(twice, once));
    expect(res.body.total).toBe(2);
  });

  it('matches any of several key values (OR)', async () => {
    const p = api.newProject();
    const a = await create(p, observation('Patient/a', '8867-4'));
    const b = await create(p, observation('Patient/b', '8867-4'));
    await create(p, observation('Patient/c', '8867-4'));
    expect(await found(p, '/Observation?subject=Patient/a,Patient/b&code=8867-4')).toEqual(sorted(a, b));
  });

  it('applies a negated filter and :missing to the key rows', async () => {
    const p = api.newProject();
    const other = await create(p, observation('Patient/a', '8480-6'));
    const noValue = await create(p, observation('Patient/a', '8867-4'));
    await create(p, observation('Patient/a', '8867-4', { valueQuantity: { value: 70, unit: '/min' } }));
    expect(await found(p, '/Observation?subject=Patient/a&code:not=8867-4')).toEqual([other]);
    expect(await found(p, '/Observation?subject=Patient/a&code=8867-4&value-quantity:missing=true')).toEqual([noValue]);
  });

  it('applies a chained filter and _has to the key rows', async () => {
    const p = api.newProject();
    const practitioner = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Osler' }] });
    const byOsler = await create(p, observation('Patient/a', '8867-4', { performer: [{ reference: `Practitioner/${practitioner}` }] }));
    await create(p, observation('Patient/a', '8867-4'));
    expect(await found(p, '/Observation?subject=Patient/a&performer:Practitioner.name=osler')).toEqual([byOsler]);

    const patient = await create(p, { resourceType: 'Patient', identifier: [{ system: 'urn:mrn', value: '42' }], gender: 'female' });
    await create(p, observation(`Patient/${patient}`, '8867-4'));
    await create(p, { resourceType: 'Patient', identifier: [{ system: 'urn:mrn', value: '42' }], gender: 'female' });
    expect(await found(p, '/Patient?identifier=urn:mrn|42&_has:Observation:subject:code=8867-4')).toEqual([patient]);
  });

  it('applies _lastUpdated, a column of the resource, as well', async () => {
    const p = api.newProject();
    const hit = await create(p, observation('Patient/a', '8867-4'));
    expect(await found(p, '/Observation?subject=Patient/a&code=8867-4&_lastUpdated=lt2100-01-01')).toEqual([hit]);
    expect(await found(p, '/Observation?subject=Patient/a&code=8867-4&_lastUpdated=gt2100-01-01')).toEqual([]);
  });

  it('sorts and pages the matches', async () => {
    const p = api.newProject();
    const late = await create(p, observation('Patient/a', '8867-4', { effectiveDateTime: '2024-03-01' }));
    const early = await create(p, observation('Patient/a', '8867-4', { effectiveDateTime: '2024-01-01' }));
    const middle = await create(p, observation('Patient/a', '8867-4', { effectiveDateTime: '2024-02-01' }));
    await create(p, observation('Patient/a', '8480-6', { effectiveDateTime: '2024-01-15' }));
    const pages = await matchesOfEveryPage(p, '/Observation?subject=Patient/a&code=8867-4&_sort=-date&_count=1');
    expect(pages).toEqual([late, middle, early]);
  });

  it('walks the matches by cursor', async () => {
    const p = api.newProject();
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push(await create(p, observation('Patient/a', '8867-4')));
    await create(p, observation('Patient/a', '8480-6'));
    const pages = await matchesOfEveryPage(p, '/Observation?subject=Patient/a&code=8867-4&_sort=_lastUpdated&_count=20');
    expect(pages).toEqual(ids);
  });

  it('does not find deleted resources', async () => {
    const p = api.newProject();
    const kept = await create(p, observation('Patient/a', '8867-4'));
    const deleted = await create(p, observation('Patient/a', '8867-4'));
    expect((await p.delete(`/Observation/${deleted}`)).status).toBe(200);
    expect(await found(p, '/Observation?subject=Patient/a&code=8867-4')).toEqual([kept]);
  });

  it("does not find another project's resources", async () => {
    const mine = api.newProject();
    const theirs = api.newProject();
    const hit = await create(mine, observation('Patient/a', '8867-4'));
    await create(theirs, observation('Patient/a', '8867-4'));
    expect(await found(mine, '/Observation?subject=Patient/a&code=8867-4')).toEqual([hit]);
  });

  it('serves a super admin naming the project with _project', async () => {
    const p = api.newProject();
    const hit = await create(p, observation('Patient/a', '8867-4'));
    await create(p, observation('Patient/a', '8480-6'));
    await create(api.newProject(), observation('Patient/a', '8867-4'));
    expect(matchIds(await api.superAdmin.get(`/Observation?subject=Patient/a&code=8867-4&_project=${p.projectId}`))).toEqual([hit]);
  });
});

/** `_id` with other filters: the listed ids are the candidates the other filters are tested on. */
describe('ids with other filters', () => {
  it('finds the listed resources that meet the other filter, and no others', async () => {
    const p = api.newProject();
    const hit = await create(p, observation('Patient/a', '8867-4'));
    const otherCode = await create(p, observation('Patient/a', '8480-6'));
    await create(p, observation('Patient/a', '8867-4'));
    expect(await found(p, `/Observation?_id=${hit},${otherCode},unknown&code=http://loinc.org|8867-4`)).toEqual([hit]);
  });

  it("does not find a deleted resource or another project's resource by its id", async () => {
    const mine = api.newProject();
    const kept = await create(mine, observation('Patient/a', '8867-4'));
    const deleted = await create(mine, observation('Patient/a', '8867-4'));
    expect((await mine.delete(`/Observation/${deleted}`)).status).toBe(200);
    const theirs = await create(api.newProject(), observation('Patient/a', '8867-4'));
    expect(await found(mine, `/Observation?_id=${kept},${deleted},${theirs}&code=8867-4`)).toEqual([kept]);
  });

  it('sorts, pages and counts the matches', async () => {
    const p = api.newProject();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await create(p, observation('Patient/a', '8867-4')));
    const res = await p.get(`/Observation?_id=${ids.join(',')}&status=final&_sort=-_lastUpdated&_count=2&_total=accurate`);
    expect(res.body.total).toBe(3);
    expect(matchIds(res)).toEqual([ids[2], ids[1]]);
  });
});

/**
 * A chain ending in an identifier starts from the identifier's rows, then the references to those
 * resources (query/conditions/chain-has.ts): it must match exactly what the chain means.
 */
describe('a chain ending in an identifier', () => {
  const patient = (value: string, extra: Record<string, unknown> = {}) => ({ resourceType: 'Patient', identifier: [{ system: 'urn:mrn', value }], ...extra });

  it('finds the resources that reference a resource with the identifier, with or without a type', async () => {
    const p = api.newProject();
    const a = await create(p, patient('7'));
    const b = await create(p, patient('8'));
    const hit = await create(p, observation(`Patient/${a}`, '8867-4'));
    await create(p, observation(`Patient/${b}`, '8867-4'));
    expect(await found(p, '/Observation?subject:Patient.identifier=urn:mrn|7')).toEqual([hit]);
    expect(await found(p, '/Observation?subject.identifier=urn:mrn|7')).toEqual([hit]);
  });

  it('applies the other filters and counts the matches', async () => {
    const p = api.newProject();
    const a = await create(p, patient('7'));
    const hit = await create(p, observation(`Patient/${a}`, '8867-4'));
    await create(p, observation(`Patient/${a}`, '8480-6'));
    const res = await p.get('/Observation?subject:Patient.identifier=urn:mrn|7&code=8867-4&_total=accurate');
    expect(matchIds(res)).toEqual([hit]);
    expect(res.body.total).toBe(1);
  });

  it('does not match through a deleted resource', async () => {
    const p = api.newProject();
    const a = await create(p, patient('7'));
    await create(p, observation(`Patient/${a}`, '8867-4'));
    expect((await p.delete(`/Patient/${a}`)).status).toBe(200);
    expect(await found(p, '/Observation?subject:Patient.identifier=urn:mrn|7')).toEqual([]);
  });

  it('does not match a resource of another project with the same identifier', async () => {
    const p = api.newProject();
    const q = api.newProject();
    const mine = await create(p, observation(`Patient/${await create(p, patient('7'))}`, '8867-4'));
    await create(q, observation(`Patient/${await create(q, patient('7'))}`, '8867-4'));
    expect(await found(p, '/Observation?subject:Patient.identifier=urn:mrn|7')).toEqual([mine]);
  });

  it('follows a chain of chains to the identifier', async () => {
    const p = api.newProject();
    const org = await create(p, { resourceType: 'Organization', identifier: [{ system: 'urn:org', value: 'acme' }] });
    const member = await create(p, patient('1', { managingOrganization: { reference: `Organization/${org}` } }));
    const other = await create(p, patient('2'));
    const hit = await create(p, observation(`Patient/${member}`, '8867-4'));
    await create(p, observation(`Patient/${other}`, '8867-4'));
    expect(await found(p, '/Observation?subject:Patient.organization.identifier=urn:org|acme')).toEqual([hit]);
  });
});
