import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found } from './helpers.js';

/**
 * `_filter` (the FHIR filter expression language): comparisons on search parameters joined by
 * and/or/not and parentheses, answered like the equivalent REST parameters; a bad filter is a 400
 * saying where.
 */

const api = await useTestServer();

const filter = (type: string, text: string): string => `/${type}?_filter=${encodeURIComponent(text)}`;

/** Three patients of a new project, by name. */
async function patients(p: ProjectClient): Promise<Record<'peter' | 'petra' | 'anna', string>> {
  const make = (given: string, family: string, gender: string, birthDate: string) =>
    create(p, { resourceType: 'Patient', name: [{ given: [given], family }], gender, birthDate });
  return {
    peter: await make('Peter', 'Smith', 'male', '2010-05-01'),
    petra: await make('Petra', 'Jones', 'female', '2015-03-02'),
    anna: await make('Anna', 'Petersen', 'female', '2020-01-01'),
  };
}

describe('_filter', () => {
  it('eq on a string is an exact match, sw a prefix, co a substring, ew a suffix', async () => {
    const p = api.newProject();
    const ids = await patients(p);
    expect(await found(p, filter('Patient', 'given eq Peter'))).toEqual([ids.peter]);
    expect(await found(p, filter('Patient', 'given eq pete'))).toEqual([]);
    expect(await found(p, filter('Patient', 'given sw pet'))).toEqual([ids.peter, ids.petra].sort());
    expect(await found(p, filter('Patient', 'name co "pet"'))).toEqual([ids.peter, ids.petra, ids.anna].sort());
    expect(await found(p, filter('Patient', 'family ew "sen"'))).toEqual([ids.anna]);
  });

  it('ne on a string keeps resources without that exact value', async () => {
    const p = api.newProject();
    const ids = await patients(p);
    expect(await found(p, filter('Patient', 'given ne Peter'))).toEqual([ids.petra, ids.anna].sort());
  });

  it('dates take gt, lt, ge, le and the other prefixes as operators', async () => {
    const p = api.newProject();
    const ids = await patients(p);
    expect(await found(p, filter('Patient', 'birthdate gt 2012-01-01'))).toEqual([ids.petra, ids.anna].sort());
    expect(await found(p, filter('Patient', 'birthdate le 2015-03-02'))).toEqual([ids.peter, ids.petra].sort());
    expect(await found(p, filter('Patient', 'birthdate ge 2015-03-02 and birthdate lt 2020-01-01'))).toEqual([ids.petra]);
  });

  it('and binds tighter than or; parentheses and not group', async () => {
    const p = api.newProject();
    const ids = await patients(p);
    expect(await found(p, filter('Patient', 'gender eq male or gender eq female and birthdate gt 2018-01-01'))).toEqual([ids.peter, ids.anna].sort());
    expect(await found(p, filter('Patient', '(gender eq male or gender eq female) and birthdate gt 2018-01-01'))).toEqual([ids.anna]);
    expect(await found(p, filter('Patient', 'not (gender eq female) or family eq Jones'))).toEqual([ids.peter, ids.petra].sort());
  });

  it('tokens take system|code, ne and in; references eq; pr true/false', async () => {
    const p = api.newProject();
    const subject = await create(p, { resourceType: 'Patient' });
    const obs = (code: string, ref?: string) =>
      create(p, {
        resourceType: 'Observation',
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code }] },
        ...(ref ? { subject: { reference: ref } } : {}),
      });
    const a = await obs('8867-4', `Patient/${subject}`);
    const b = await obs('8310-5');
    expect(await found(p, filter('Observation', 'code eq http://loinc.org|8867-4'))).toEqual([a]);
    expect(await found(p, filter('Observation', 'code ne http://loinc.org|8867-4'))).toEqual([b]);
    expect(await found(p, filter('Observation', `subject eq Patient/${subject}`))).toEqual([a]);
    expect(await found(p, filter('Observation', 'subject pr false'))).toEqual([b]);
    expect(await found(p, filter('Observation', `_id eq ${b} or subject pr true`))).toEqual([a, b].sort());
  });

  it('a quoted value keeps its spaces, commas and escaped quotes as one value', async () => {
    const p = api.newProject();
    const id = await create(p, { resourceType: 'Patient', name: [{ family: 'van "der", Berg' }] });
    await create(p, { resourceType: 'Patient', name: [{ family: 'van' }] });
    expect(await found(p, filter('Patient', 'family eq "van \\"der\\", Berg"'))).toEqual([id]);
  });

  it('is ANDed with the other parameters of the search', async () => {
    const p = api.newProject();
    const ids = await patients(p);
    expect(await found(p, `${filter('Patient', 'given sw pet')}&gender=female`)).toEqual([ids.petra]);
  });

  it.each([
    ['given eq', 'character 9', 'expected a value'],
    ['(given eq Peter', 'character 16', 'expected ")"'],
    ['given eq Peter junk', 'character 16', 'expected "and", "or"'],
    ['given xx Peter', 'character 7', 'expected an operator'],
    ['bogus eq 1', 'character 1', 'Unknown search parameter "bogus"'],
    ['birthdate eq notadate', 'character 1', 'Invalid date'],
    ['given gt 1', 'character 1', 'Operator gt is not supported on string'],
    ['general-practitioner.name eq x', 'character 1', 'chains'],
  ])('a bad filter (%s) is a 400 saying where', async (text, where, what) => {
    const p = api.newProject();
    const res = await p.get(filter('Patient', text));
    expect(res.status, res.text).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].details.text).toContain(where);
    expect(res.body.issue[0].details.text).toContain(what);
    expect(res.body.issue[0].expression).toEqual(['_filter']);
  });

  it('the ends-with modifier it uses is not a REST modifier', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient?family:ends-with=sen');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain(':ends-with');
  });
});
