import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, matchIds, sorted } from './helpers.js';

/**
 * Plain quantity parameters against Range values (`onset-age`, `abatement-age`,
 * `context-quantity`, a project's own quantity parameter): the search value is compared with the
 * range [low, high] as search.html#prefix says, the same way as a quantity component of a
 * composite (composite-ranges.test.ts); a Quantity matches as before.
 */

const api = await useTestServer();

const UCUM = 'http://unitsofmeasure.org';
const USAGE = 'http://terminology.hl7.org/CodeSystem/usage-context-type';

type Json = Record<string, unknown>;

const years = (value: number) => ({ value, unit: 'years', system: UCUM, code: 'a' });
const range = (low?: number, high?: number): Json => ({
  ...(low === undefined ? {} : { low: years(low) }),
  ...(high === undefined ? {} : { high: years(high) }),
});

async function condition(client: ProjectClient, fields: Json): Promise<string> {
  const patient = await create(client, { resourceType: 'Patient' });
  return create(client, { resourceType: 'Condition', subject: { reference: `Patient/${patient}` }, ...fields });
}

/** Ids of the project's Conditions matching `onset-age=<value>`. */
function onsetAge(client: ProjectClient, value: string): Promise<string[]> {
  return found(client, `/Condition?onset-age=${encodeURIComponent(value)}`);
}

function useContext(value: Json): Json {
  return { code: { system: USAGE, code: 'age' }, ...value };
}

describe('quantity parameters with Range values', () => {
  it('compares each prefix with a range bounded at both ends, and a Quantity (Age) as before', async () => {
    const p = api.newProject();
    const adults = await condition(p, { onsetRange: range(18, 65) });
    const thirty = await condition(p, { onsetAge: years(30) });
    const cases: [string, string[]][] = [
      ['gt60', [adults]],
      ['gt65', []],
      ['gt70', []],
      ['ge65', [adults]],
      ['ge66', []],
      ['lt20', [adults]],
      ['lt18', []],
      ['lt10', []],
      ['le18', [adults]],
      ['le17', []],
      ['sa10', sorted(adults, thirty)],
      ['sa20', [thirty]],
      ['sa18', [thirty]],
      ['eb70', sorted(adults, thirty)],
      ['eb50', [thirty]],
      ['eb65', [thirty]],
      ['30', [thirty]],
      ['eq30', [thirty]],
      ['ne30', [adults]],
      ['ap40', [adults]],
      ['ap30', sorted(adults, thirty)],
      ['ap80', []],
      ['gt25', sorted(adults, thirty)],
      ['lt25', [adults]],
    ];
    for (const [value, expected] of cases) {
      expect(await onsetAge(p, value), value).toEqual(expected);
    }
  });

  it('a range inside the search value equals it (eq), a wider one does not', async () => {
    const p = api.newProject();
    const narrow = await condition(p, { onsetRange: range(40.1, 40.4) });
    const wide = await condition(p, { onsetRange: range(39, 41) });
    expect(await onsetAge(p, '40')).toEqual([narrow]);
    expect(await onsetAge(p, 'eq40')).toEqual([narrow]);
    expect(await onsetAge(p, 'ne40')).toEqual([wide]);
  });

  it('a Range open at one end extends without limit on that side', async () => {
    const p = api.newProject();
    const seniors = await condition(p, { onsetRange: range(65) });
    const children = await condition(p, { onsetRange: range(undefined, 12) });
    expect(await onsetAge(p, 'gt1000')).toEqual([seniors]);
    expect(await onsetAge(p, 'ge1000')).toEqual([seniors]);
    expect(await onsetAge(p, 'lt50')).toEqual([children]);
    expect(await onsetAge(p, 'le-1000')).toEqual([children]);
    expect(await onsetAge(p, 'sa60')).toEqual([seniors]);
    expect(await onsetAge(p, 'sa70')).toEqual([]);
    expect(await onsetAge(p, 'eb20')).toEqual([children]);
    expect(await onsetAge(p, 'eb10')).toEqual([]);
    expect(await onsetAge(p, 'eq10')).toEqual([]);
    expect(await onsetAge(p, 'eq70')).toEqual([]);
    expect(await onsetAge(p, 'ne10')).toEqual(sorted(seniors, children));
    expect(await onsetAge(p, 'ap70')).toEqual([seniors]);
    expect(await onsetAge(p, 'ap5')).toEqual([children]);
    expect(await onsetAge(p, 'ap-1000')).toEqual([children]);
  });

  it('matches the system and code of the range when the value names them', async () => {
    const p = api.newProject();
    const adults = await condition(p, { onsetRange: range(18, 65) });
    // Only the high has a unit: the row takes it.
    const months = await condition(p, { onsetRange: { low: { value: 700 }, high: { value: 800, system: UCUM, code: 'mo' } } });
    expect(await onsetAge(p, `gt60|${UCUM}|a`)).toEqual([adults]);
    expect(await onsetAge(p, 'gt60||a')).toEqual([adults]);
    expect(await onsetAge(p, `gt60|${UCUM}|mo`)).toEqual([months]);
    expect(await onsetAge(p, 'gt60||mo')).toEqual([months]);
    expect(await onsetAge(p, 'gt60|http://example.org/units|a')).toEqual([]);
    expect(await onsetAge(p, 'gt60')).toEqual(sorted(adults, months));
  });

  it('abatement-age takes an Age or a Range too', async () => {
    const p = api.newProject();
    // An abated condition is resolved, inactive or in remission (invariant con-4).
    const clinicalStatus = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'resolved' }] };
    const age = await condition(p, { clinicalStatus, abatementAge: years(50) });
    const span = await condition(p, { clinicalStatus, abatementRange: range(20, 30) });
    await condition(p, { clinicalStatus, abatementString: 'in remission' });
    expect(await found(p, '/Condition?abatement-age=gt40')).toEqual([age]);
    expect(await found(p, '/Condition?abatement-age=lt25')).toEqual([span]);
    expect(await found(p, '/Condition?abatement-age=ap25')).toEqual([span]);
    expect(await found(p, '/Condition?abatement-age=le50')).toEqual(sorted(age, span));
    expect(await found(p, '/Condition?abatement-age:missing=false')).toEqual(sorted(age, span));
    expect(await found(p, '/Condition?abatement-age:missing=true')).toHaveLength(1);
  });

  it('context-quantity matches a useContext valueRange and valueQuantity (ValueSet, PlanDefinition)', async () => {
    const p = api.newProject();
    const adultSet = await create(p, { resourceType: 'ValueSet', status: 'active', useContext: [useContext({ valueRange: range(18, 65) })] });
    const thirtySet = await create(p, { resourceType: 'ValueSet', status: 'active', useContext: [useContext({ valueQuantity: years(30) })] });
    const unusedSet = await create(p, { resourceType: 'ValueSet', status: 'active' });
    expect(await found(p, '/ValueSet?context-quantity=gt60')).toEqual([adultSet]);
    expect(await found(p, '/ValueSet?context-quantity=gt20')).toEqual(sorted(adultSet, thirtySet));
    expect(await found(p, '/ValueSet?context-quantity=30')).toEqual([thirtySet]);
    expect(await found(p, `/ValueSet?context-quantity=${encodeURIComponent(`lt20|${UCUM}|a`)}`)).toEqual([adultSet]);
    expect(await found(p, '/ValueSet?context-quantity:missing=true')).toEqual([unusedSet]);
    expect(await found(p, '/ValueSet?context-quantity:missing=false')).toEqual(sorted(adultSet, thirtySet));

    const seniors = await create(p, { resourceType: 'PlanDefinition', status: 'active', useContext: [useContext({ valueRange: range(65) })] });
    const teens = await create(p, { resourceType: 'PlanDefinition', status: 'active', useContext: [useContext({ valueRange: range(13, 19) })] });
    const fifty = await create(p, { resourceType: 'PlanDefinition', status: 'active', useContext: [useContext({ valueQuantity: years(50) })] });
    expect(await found(p, '/PlanDefinition?context-quantity=ge60')).toEqual([seniors]);
    expect(await found(p, '/PlanDefinition?context-quantity=eb20')).toEqual([teens]);
    expect(await found(p, '/PlanDefinition?context-quantity=sa20')).toEqual(sorted(seniors, fifty));
    expect(await found(p, '/PlanDefinition?context-quantity=gt15,eq50')).toEqual(sorted(seniors, teens, fifty));
  });

  it('a plain Quantity matches exactly as before (Observation value-quantity)', async () => {
    const p = api.newProject();
    const obs = (value: number) => create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueQuantity: { value, system: UCUM, code: 'kg' } });
    const sixty = await obs(60);
    const eighty = await obs(80);
    const cases: [string, string[]][] = [
      ['60', [sixty]],
      ['ne60', [eighty]],
      ['gt60', [eighty]],
      ['ge60', sorted(sixty, eighty)],
      ['lt80', [sixty]],
      ['le80', sorted(sixty, eighty)],
      ['sa60', [eighty]],
      ['eb80', [sixty]],
      ['ap75', [eighty]],
      ['ap100', []],
      [`80|${UCUM}|kg`, [eighty]],
      ['80||g', []],
    ];
    for (const [value, expected] of cases) {
      expect(await found(p, `/Observation?value-quantity=${encodeURIComponent(value)}`), value).toEqual(expected);
    }
  });

  it('a reversed Range (low above high) is refused: invariant rng-2', async () => {
    const p = api.newProject();
    const res = await p.post('/Condition', { resourceType: 'Condition', subject: { reference: 'Patient/p1' }, onsetRange: range(70, 20) });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toMatch(/^rng-2: /);
  });

  it('a Range without any value gives no row; an update to a Quantity replaces the range', async () => {
    const p = api.newProject();
    const empty = await condition(p, { onsetRange: { low: { unit: 'years' } } });
    expect(await found(p, '/Condition?onset-age:missing=true')).toEqual([empty]);
    const id = await condition(p, { onsetRange: range(18, 65) });
    expect(await onsetAge(p, 'gt60')).toEqual([id]);
    const current = await p.get(`/Condition/${id}`);
    const { onsetRange: _dropped, ...rest } = current.body as Json;
    const res = await p.put(`/Condition/${id}`, { ...rest, onsetAge: years(30) });
    expect(res.status, res.text).toBe(200);
    expect(await onsetAge(p, 'gt60')).toEqual([]);
    expect(await onsetAge(p, '30')).toEqual([id]);
  });

  it('_sort orders a Range by its low ascending and by its high descending', async () => {
    const p = api.newProject();
    const wide = await condition(p, { onsetRange: range(10, 90) });
    const forty = await condition(p, { onsetAge: years(40) });
    const narrow = await condition(p, { onsetRange: range(20, 50) });
    const children = await condition(p, { onsetRange: range(undefined, 12) });
    expect(matchIds(await p.get('/Condition?_sort=onset-age'))).toEqual([children, wide, narrow, forty]);
    expect(matchIds(await p.get('/Condition?_sort=-onset-age'))).toEqual([wide, narrow, forty, children]);
  });

  it("a project's own quantity parameter on a Range is compared as a range", async () => {
    const p = api.newProject();
    await create(p, {
      resourceType: 'SearchParameter',
      url: 'http://example.org/fhir/SearchParameter/value-range',
      name: 'value-range',
      status: 'active',
      description: 'Observation.valueRange',
      code: 'value-range',
      base: ['Observation'],
      type: 'quantity',
      expression: 'Observation.value.as(Range)',
    });
    const mmol = (value: number) => ({ value, system: UCUM, code: 'mmol/L' });
    const normal = await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueRange: { low: mmol(4), high: mmol(6) } });
    expect(await found(p, '/Observation?value-range=gt5')).toEqual([normal]);
    expect(await found(p, '/Observation?value-range=gt7')).toEqual([]);
    expect(await found(p, '/Observation?value-range=5||mmol%2FL')).toEqual([]);
    expect(await found(p, '/Observation?value-range=ap5||mmol%2FL')).toEqual([normal]);
  });

  it('Group characteristic-range compares the characteristic valueRange', async () => {
    const p = api.newProject();
    const group = await create(p, {
      resourceType: 'Group',
      type: 'person',
      actual: false,
      characteristic: [{ code: { text: 'age' }, exclude: false, valueRange: range(40, 60) }],
    });
    expect(await found(p, '/Group?characteristic-range=ge60')).toEqual([group]);
    expect(await found(p, '/Group?characteristic-range=gt60')).toEqual([]);
  });
});
