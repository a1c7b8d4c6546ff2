import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, expectInvalid, found, matchIds } from './helpers.js';

/**
 * A chain, `_has` or type modifier naming a type the reference parameter cannot point at would
 * only ever find nothing: it is refused, naming the parameter and the types it can point at, as an
 * unknown parameter is (and ignored with a warning under lenient handling).
 */
const api = await useTestServer();

const GP_TARGETS = 'Organization, Practitioner, PractitionerRole';

describe('chains through a type the reference cannot point at', () => {
  it('are refused with 400 naming the parameter and its target types', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient?general-practitioner:Patient.name=x');
    expectInvalid(res, GP_TARGETS);
    expect(res.body.issue[0].details.text).toContain('general-practitioner');
    expect(res.body.issue[0].expression).toEqual(['general-practitioner:Patient.name']);
  });

  it('are refused at a deeper level of the chain too', async () => {
    const p = api.newProject();
    const res = await p.get('/Observation?subject:Patient.general-practitioner:Patient.name=x');
    expectInvalid(res, GP_TARGETS);
  });

  it('a type modifier without chain is refused alike', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?general-practitioner:Patient=123'), GP_TARGETS);
  });

  it('are ignored with a warning under lenient handling, as an unknown parameter is', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Lenient' }] });
    const res = await p.get('/Patient?general-practitioner:Patient.name=x', { Prefer: 'handling=lenient' });
    expect(matchIds(res)).toEqual([patient]);
    const outcome = res.body.entry.find((e: { search: { mode: string } }) => e.search.mode === 'outcome');
    expect(outcome.resource.issue[0].severity).toBe('warning');
    expect(outcome.resource.issue[0].details.text).toContain(GP_TARGETS);
  });

  it('chains through a target type still match', async () => {
    const p = api.newProject();
    const gp = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Welby' }] });
    const patient = await create(p, { resourceType: 'Patient', generalPractitioner: [{ reference: `Practitioner/${gp}` }] });
    expect(await found(p, '/Patient?general-practitioner:Practitioner.name=welby')).toEqual([patient]);
    expect(await found(p, `/Patient?general-practitioner:Practitioner=${gp}`)).toEqual([patient]);
  });
});

describe('_has through a reference that cannot point at the searched type', () => {
  it('is refused with 400 naming the parameter and its target types', async () => {
    const p = api.newProject();
    const res = await p.get('/Encounter?_has:Patient:general-practitioner:name=x');
    expectInvalid(res, GP_TARGETS);
    expect(res.body.issue[0].expression).toEqual(['_has:Patient:general-practitioner:name']);
  });

  it('a reference that can point at the searched type still matches', async () => {
    const p = api.newProject();
    const gp = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Kildare' }] });
    await create(p, { resourceType: 'Patient', name: [{ family: 'Has' }], generalPractitioner: [{ reference: `Practitioner/${gp}` }] });
    expect(await found(p, '/Practitioner?_has:Patient:general-practitioner:name=has')).toEqual([gp]);
  });
});
