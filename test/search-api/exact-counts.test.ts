import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { create } from './helpers.js';

/**
 * Exact counts (`_summary=count`, `_total=accurate`) are read from the index tables when the
 * search allows it (exact-count.ts, indexCountQuery). These pin what such a count must agree with:
 * deleted resources are not counted, a resource with several matching values counts once, and
 * the other parameters of the search still apply.
 */
const api = await useTestServer();

const observation = (codes: string[], status = 'final') => ({
  resourceType: 'Observation',
  status,
  code: { coding: codes.map((code) => ({ system: 'http://loinc.org', code })) },
});

describe('exact counts', () => {
  it('a type without parameters counts its resources, not the deleted ones', async () => {
    const p = api.newProject();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await create(p, { resourceType: 'Patient', gender: 'male' }));
    expect((await p.delete(`/Patient/${ids[0]}`)).status).toBe(200);
    const res = await p.get('/Patient?_summary=count');
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('a deleted resource is not counted by a parameter it matched', async () => {
    const p = api.newProject();
    const gone = await create(p, observation(['8867-4']));
    await create(p, observation(['8867-4']));
    expect((await p.delete(`/Observation/${gone}`)).status).toBe(200);
    const res = await p.get('/Observation?code=http://loinc.org|8867-4&_total=accurate&_count=0');
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(1);
  });

  it('a resource matching with several values counts once', async () => {
    const p = api.newProject();
    await create(p, observation(['8867-4', '8867-4', '8310-5']));
    await create(p, observation(['8867-4']));
    const res = await p.get('/Observation?code=8867-4,8310-5&_summary=count');
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('a code held in two systems by one resource counts it once when searched without a system', async () => {
    const p = api.newProject();
    const codings = [
      { system: 'http://loinc.org', code: '8867-4' },
      { system: 'http://example.org/local-codes', code: '8867-4' },
    ];
    await create(p, { resourceType: 'Observation', status: 'final', code: { coding: codings } });
    await create(p, observation(['8867-4']));
    const res = await p.get('/Observation?code=8867-4&_summary=count');
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('a parameter of one value per resource counts its current values, after updates and deletes', async () => {
    const p = api.newProject();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await create(p, observation(['8867-4'], 'final')));
    await create(p, observation(['8867-4'], 'preliminary'));
    expect((await p.put(`/Observation/${ids[0]}`, { ...observation(['8867-4'], 'amended'), id: ids[0] })).status).toBe(200);
    expect((await p.delete(`/Observation/${ids[1]}`)).status).toBe(200);
    const final = await p.get('/Observation?status=final&_summary=count');
    expect(final.status, final.text).toBe(200);
    expect(final.body.total).toBe(1);
    const either = await p.get('/Observation?status=final,amended&_summary=count');
    expect(either.body.total).toBe(2);
  });

  it('every parameter of the search applies to the count', async () => {
    const p = api.newProject();
    await create(p, observation(['8867-4'], 'final'));
    await create(p, observation(['8867-4'], 'final'));
    await create(p, observation(['8867-4'], 'preliminary'));
    await create(p, observation(['8310-5'], 'final'));
    const res = await p.get('/Observation?code=http://loinc.org|8867-4&status:not=preliminary&_summary=count');
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('a super admin counts across projects, narrowed by _project', async () => {
    const a = api.newProject();
    const b = api.newProject();
    await create(a, observation(['8867-4']));
    await create(b, observation(['8867-4']));
    await create(b, observation(['8867-4'], 'preliminary'));
    const one = await api.superAdmin.get(`/Observation?code=8867-4&_summary=count&_project=${b.projectId}`);
    expect(one.status, one.text).toBe(200);
    expect(one.body.total).toBe(2);
    const both = await api.superAdmin.get(`/Observation?code=8867-4&status=final&_summary=count&_project=${a.projectId},${b.projectId}`);
    expect(both.status, both.text).toBe(200);
    expect(both.body.total).toBe(2);
    const patients = await api.superAdmin.get(`/Patient?_summary=count&_project=${b.projectId}`);
    expect(patients.status, patients.text).toBe(200);
    expect(patients.body.total).toBe(0);
  });

  it("a super admin's count of one day's resources in a project counts that project's only", async () => {
    const a = api.newProject();
    const b = api.newProject();
    const on = (day: string) => ({ ...observation(['8867-4']), effectiveDateTime: `${day}T10:00:00Z` });
    await create(a, on('2023-03-01'));
    await create(b, on('2023-03-01'));
    await create(b, on('2023-03-01'));
    await create(b, on('2023-03-02'));
    const res = await api.superAdmin.get(`/Observation?date=2023-03-01&_summary=count&_project=${b.projectId}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('counts only the caller’s project', async () => {
    const mine = api.newProject();
    const theirs = api.newProject();
    await create(mine, observation(['8867-4']));
    await create(theirs, observation(['8867-4']));
    await create(theirs, observation(['8867-4']));
    const res = await mine.get('/Observation?code=8867-4&_summary=count');
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(1);
  });

  it('a member whose AccessPolicy narrows the type counts only what the criteria allow', async () => {
    const admin = api.newProject();
    await create(admin, observation(['8867-4'], 'final'));
    await create(admin, observation(['8867-4'], 'final'));
    await create(admin, observation(['8867-4'], 'preliminary'));
    await create(admin, observation(['8310-5'], 'final'));
    const member = await memberWithCriteria(admin, ['Observation?status=final']);
    const byCode = await member.get('/Observation?code=http://loinc.org|8867-4&_summary=count');
    expect(byCode.status, byCode.text).toBe(200);
    expect(byCode.body.total).toBe(2);
    const all = await member.get('/Observation?_total=accurate&_count=1');
    expect(all.status, all.text).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.meta.tag).toEqual([{ system: 'https://flint.dev/fhir/CodeSystem/search-total', code: 'exact' }]);
  });

  it('criteria naming a key count only the resources of that key', async () => {
    const admin = api.newProject();
    const mine = await create(admin, { resourceType: 'Patient', gender: 'female' });
    const other = await create(admin, { resourceType: 'Patient', gender: 'female' });
    for (const [patient, code] of [[mine, '8867-4'], [mine, '8310-5'], [other, '8867-4']]) {
      await create(admin, { ...observation([code]), subject: { reference: `Patient/${patient}` } });
    }
    const member = await memberWithCriteria(admin, [`Observation?subject=Patient/${mine}`]);
    const byCode = await member.get('/Observation?code=http://loinc.org|8867-4&_summary=count');
    expect(byCode.status, byCode.text).toBe(200);
    expect(byCode.body.total).toBe(1);
    const all = await member.get('/Observation?_summary=count');
    expect(all.body.total).toBe(2);
  });
});

/** A member client of `admin`'s project whose AccessPolicy allows Observations meeting `criteria` (one rule each). */
async function memberWithCriteria(admin: ProjectClient, criteria: string[]): Promise<ProjectClient> {
  const policy = await admin.post('/AccessPolicy', {
    resourceType: 'AccessPolicy',
    name: 'narrowed',
    resource: criteria.map((c) => ({ resourceType: 'Observation', criteria: c })),
  });
  expect(policy.status, policy.text).toBe(201);
  const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  return projectClient(api.fhir, admin.projectId, async () => member.token);
}
