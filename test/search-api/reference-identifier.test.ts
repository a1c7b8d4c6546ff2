import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, expectInvalid, found, sorted } from './helpers.js';

/** The reference modifier `:identifier` (search.html#reference): matches Reference.identifier as a token. */

const api = await useTestServer();

const HOSPITAL = 'http://hospital.example.org/mrn';

const observation = (subject: Record<string, unknown>) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
  subject,
});

describe('reference :identifier', () => {
  it('matches a reference that carries only an identifier, by system|value', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ identifier: { system: HOSPITAL, value: 'MRN123' } }));
    await create(p, observation({ identifier: { system: HOSPITAL, value: 'MRN999' } }));
    expect(await found(p, `/Observation?subject:identifier=${HOSPITAL}|MRN123`)).toEqual([a]);
  });

  it('matches a reference that has both a target and an identifier', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    const a = await create(p, observation({ reference: `Patient/${patient}`, identifier: { system: HOSPITAL, value: 'MRN123' } }));
    expect(await found(p, `/Observation?subject:identifier=${HOSPITAL}|MRN123`)).toEqual([a]);
    expect(await found(p, `/Observation?subject=Patient/${patient}`)).toEqual([a]);
  });

  it('follows token rules: value alone, |value without a system, system| alone', async () => {
    const p = api.newProject();
    const withSystem = await create(p, observation({ identifier: { system: HOSPITAL, value: 'MRN123' } }));
    const noSystem = await create(p, observation({ identifier: { value: 'MRN123' } }));
    const other = await create(p, observation({ identifier: { system: 'http://other.example.org', value: 'MRN123' } }));
    expect(await found(p, '/Observation?subject:identifier=MRN123')).toEqual(sorted(withSystem, noSystem, other));
    expect(await found(p, '/Observation?subject:identifier=|MRN123')).toEqual([noSystem]);
    expect(await found(p, `/Observation?subject:identifier=${HOSPITAL}|`)).toEqual([withSystem]);
  });

  it('does not match the identifier of the referenced resource', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', identifier: [{ system: HOSPITAL, value: 'MRN123' }] });
    await create(p, observation({ reference: `Patient/${patient}` }));
    expect(await found(p, `/Observation?subject:identifier=${HOSPITAL}|MRN123`)).toEqual([]);
  });

  it('commas are OR', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ identifier: { system: HOSPITAL, value: 'A' } }));
    const b = await create(p, observation({ identifier: { system: HOSPITAL, value: 'B' } }));
    await create(p, observation({ identifier: { system: HOSPITAL, value: 'C' } }));
    expect(await found(p, `/Observation?subject:identifier=${HOSPITAL}|A,${HOSPITAL}|B`)).toEqual(sorted(a, b));
  });

  it('a type-restricted parameter matches when Reference.type names the type', async () => {
    const p = api.newProject();
    const typed = await create(p, observation({ type: 'Patient', identifier: { system: HOSPITAL, value: 'MRN123' } }));
    await create(p, observation({ type: 'Group', identifier: { system: HOSPITAL, value: 'MRN123' } }));
    expect(await found(p, `/Observation?patient:identifier=${HOSPITAL}|MRN123`)).toEqual([typed]);
  });

  it('is 400 on a parameter that is not a reference', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?code:identifier=x'), ':identifier');
  });

  it('an empty value is 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?subject:identifier='), 'subject:identifier');
  });
});
