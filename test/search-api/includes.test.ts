import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, expectInvalid, found, includeRefs, matchIds, sorted } from './helpers.js';

const api = await useTestServer();

async function fixture(p: ProjectClient) {
  const org = await create(p, { resourceType: 'Organization', name: 'Acme Health' });
  const alice = await create(p, { resourceType: 'Patient', name: [{ family: 'Alvarez' }], managingOrganization: { reference: `Organization/${org}` } });
  const bob = await create(p, { resourceType: 'Patient', name: [{ family: 'Brown' }] });
  const obs = (subject: string, code: string) =>
    create(p, {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code }] },
      subject: { reference: `Patient/${subject}` },
    });
  const aliceHr = await obs(alice, '8867-4');
  const aliceWt = await obs(alice, '29463-7');
  const bobHr = await obs(bob, '8867-4');
  return { org, alice, bob, aliceHr, aliceWt, bobHr };
}

describe('_include and _revinclude', () => {
  it('_include adds the referenced resources with search.mode include', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const res = await p.get('/Observation?code=8867-4&_include=Observation:subject');
    expect(matchIds(res).sort()).toEqual(sorted(f.aliceHr, f.bobHr));
    expect(includeRefs(res)).toEqual(sorted(`Patient/${f.alice}`, `Patient/${f.bob}`));
  });

  it('_include with a target type only includes that type', async () => {
    const p = api.newProject();
    await fixture(p);
    const res = await p.get('/Observation?code=8867-4&_include=Observation:subject:Group');
    expect(includeRefs(res)).toEqual([]);
  });

  it('_revinclude adds the resources that reference the matches', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const res = await p.get(`/Patient?_id=${f.alice}&_revinclude=Observation:subject`);
    expect(matchIds(res)).toEqual([f.alice]);
    expect(includeRefs(res)).toEqual(sorted(`Observation/${f.aliceHr}`, `Observation/${f.aliceWt}`));
  });

  it(':iterate follows includes of included resources', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const plain = await p.get(`/Observation?_id=${f.aliceHr}&_include=Observation:subject&_include=Patient:organization`);
    expect(includeRefs(plain)).toEqual([`Patient/${f.alice}`]);
    const iterated = await p.get(`/Observation?_id=${f.aliceHr}&_include=Observation:subject&_include:iterate=Patient:organization`);
    expect(includeRefs(iterated)).toEqual(sorted(`Organization/${f.org}`, `Patient/${f.alice}`));
  });

  it('an included resource that is also a match appears once, as a match', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const res = await p.get(`/Patient?_id=${f.alice}&_revinclude=Observation:subject&_include:iterate=Observation:subject`);
    expect(matchIds(res)).toEqual([f.alice]);
    expect(includeRefs(res)).not.toContain(`Patient/${f.alice}`);
  });

  it('a malformed _include gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?_include=Observation'), '_include');
    expectInvalid(await p.get('/Observation?_include=Observation:code'), 'not a reference');
  });
});

describe('chained parameters and _has', () => {
  it('subject:Patient.name matches observations by their patient name', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    expect(await found(p, '/Observation?subject:Patient.name=alv')).toEqual(sorted(f.aliceHr, f.aliceWt));
  });

  it('a chain without a type modifier uses the targets that have the parameter', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    expect(await found(p, '/Observation?subject.family=brown')).toEqual([f.bobHr]);
  });

  it('chains of several levels', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    expect(await found(p, '/Observation?subject:Patient.organization.name=acme')).toEqual(sorted(f.aliceHr, f.aliceWt));
    expect(await found(p, '/Observation?subject:Patient.organization.name=other')).toEqual([]);
  });

  it('chain combined with another parameter', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    expect(await found(p, '/Observation?subject:Patient.name=alv&code=8867-4')).toEqual([f.aliceHr]);
  });

  it('a chain on a non-reference parameter gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?code.name=x'), 'code');
  });

  it('_has finds resources referenced by matching resources', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    expect(await found(p, '/Patient?_has:Observation:subject:code=29463-7')).toEqual([f.alice]);
    expect(await found(p, '/Patient?_has:Observation:subject:code=8867-4')).toEqual(sorted(f.alice, f.bob));
  });

  it('nested _has', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    expect(await found(p, '/Organization?_has:Patient:organization:_has:Observation:subject:code=29463-7')).toEqual([f.org]);
  });

  it('a malformed _has gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?_has:Observation=x'), '_has');
  });
});

describe('other ways to search', () => {
  it('POST /{type}/_search with a form body', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const res = await p.request('POST', '/Patient/_search', 'family=alv', { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(matchIds(res)).toEqual([f.alice]);
    expect(res.body.link.find((l: any) => l.relation === 'self').url).toContain('/Patient?family=alv');
  });

  it('system search with _type', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const res = await p.get(`?_type=Patient,Organization&_count=100`);
    const refs = res.body.entry.map((e: any) => `${e.resource.resourceType}/${e.resource.id}`).sort();
    expect(refs).toEqual(sorted(`Organization/${f.org}`, `Patient/${f.alice}`, `Patient/${f.bob}`));
  });

  it('system search with a common parameter over several types', async () => {
    const p = api.newProject();
    const f = await fixture(p);
    const res = await p.get(`?_type=Patient,Observation&_id=${f.alice},${f.aliceHr}`);
    expect(matchIds(res).sort()).toEqual(sorted(f.alice, f.aliceHr));
  });

  it('_summary and _elements apply to the entries', async () => {
    const p = api.newProject();
    await fixture(p);
    const res = await p.get('/Patient?family=alv&_elements=name');
    const resource = res.body.entry[0].resource;
    expect(resource.name).toBeDefined();
    expect(resource.managingOrganization).toBeUndefined();
    expect(resource.meta.tag.some((t: any) => t.code === 'SUBSETTED')).toBe(true);
    const summary = await p.get('/Patient?family=alv&_summary=true');
    expect(summary.body.entry[0].resource.name).toBeDefined();
  });

  it('the CapabilityStatement lists search interactions and parameters', async () => {
    const res = await fetch(`${api.fhir}/metadata`);
    const body = await res.json();
    const patient = body.rest[0].resource.find((r: any) => r.type === 'Patient');
    expect(patient.interaction.map((i: any) => i.code)).toContain('search-type');
    expect(patient.searchParam.map((s: any) => s.name)).toEqual(expect.arrayContaining(['name', 'birthdate', '_id', '_lastUpdated']));
    expect(body.rest[0].interaction.map((i: any) => i.code)).toContain('search-system');
  });
});
