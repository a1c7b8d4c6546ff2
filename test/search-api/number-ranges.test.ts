import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, matchIds, sorted } from './helpers.js';

/**
 * Number parameters against Range values: RiskAssessment `probability`
 * (`RiskAssessment.prediction.probability`, a decimal or a Range). A Range is compared as the
 * interval [low, high] as search.html#prefix says (as quantity parameters do,
 * quantity-ranges.test.ts), with the searched number's precision giving its implicit range; a
 * decimal matches as before.
 */

const api = await useTestServer();

type Json = Record<string, unknown>;

const UCUM = 'http://unitsofmeasure.org';
const percent = (value: number): Json => ({ value, unit: '%', system: UCUM, code: '%' });
const range = (low?: number, high?: number): Json => ({
  ...(low === undefined ? {} : { low: percent(low) }),
  ...(high === undefined ? {} : { high: percent(high) }),
});

/** A RiskAssessment with one prediction per given probability (a Range object or a decimal). */
async function assessment(client: ProjectClient, ...probabilities: (Json | number)[]): Promise<string> {
  const prediction = probabilities.map((p) => (typeof p === 'number' ? { probabilityDecimal: p } : { probabilityRange: p }));
  return create(client, {
    resourceType: 'RiskAssessment',
    status: 'final',
    subject: { reference: 'Patient/example' },
    ...(prediction.length ? { prediction } : {}),
  });
}

/** Ids of the project's RiskAssessments matching `probability=<value>`, sorted. */
function probability(client: ProjectClient, value: string): Promise<string[]> {
  return found(client, `/RiskAssessment?probability=${encodeURIComponent(value)}`);
}

describe('number parameters with Range values (RiskAssessment probability)', () => {
  // Each prefix against the Range 20-40: searches that find it, searches that do not.
  it.each([
    ['gt matches a range whose high is above the value', ['gt30', 'gt39.9'], ['gt40']],
    ['ge matches a range whose high is at or above the value', ['ge40'], ['ge41']],
    ['lt matches a range whose low is below the value', ['lt21'], ['lt20']],
    ['le matches a range whose low is at or below the value', ['le20'], ['le19']],
    ['sa matches a range lying wholly above the value', ['sa19'], ['sa20', 'sa30']],
    ['eb matches a range lying wholly below the value', ['eb41'], ['eb40', 'eb30']],
  ])('%s', async (_rule, finding, missing) => {
    const p = api.newProject();
    const id = await assessment(p, range(20, 40));
    for (const value of finding) expect(await probability(p, value), value).toEqual([id]);
    for (const value of missing) expect(await probability(p, value), value).toEqual([]);
  });

  it('eq (and no prefix) matches a range inside the implicit range of the value, not a wider one', async () => {
    const p = api.newProject();
    const narrow = await assessment(p, range(30.1, 30.4));
    await assessment(p, range(20, 40));
    expect(await probability(p, 'eq30')).toEqual([narrow]);
    expect(await probability(p, '30')).toEqual([narrow]);
  });

  it("eq takes the searched value's precision: 30.0 stands for [29.95, 30.05)", async () => {
    const p = api.newProject();
    const tight = await assessment(p, range(29.96, 30.04));
    const loose = await assessment(p, range(30.1, 30.4));
    expect(await probability(p, '30')).toEqual(sorted(tight, loose));
    expect(await probability(p, '30.0')).toEqual([tight]);
    expect(await probability(p, '3e1')).toEqual(sorted(tight, loose));
  });

  it('ne matches a range that is not inside the implicit range of the value', async () => {
    const p = api.newProject();
    await assessment(p, range(30.1, 30.4));
    const wide = await assessment(p, range(20, 40));
    expect(await probability(p, 'ne30')).toEqual([wide]);
  });

  it('ap matches a range overlapping the value ±10%', async () => {
    const p = api.newProject();
    const id = await assessment(p, range(20, 40));
    expect(await probability(p, 'ap44')).toEqual([id]); // [39.6, 48.4]
    expect(await probability(p, 'ap19')).toEqual([id]); // [17.1, 20.9]
    expect(await probability(p, 'ap30')).toEqual([id]);
    expect(await probability(p, 'ap46')).toEqual([]); // [41.4, 50.6]
    expect(await probability(p, 'ap15')).toEqual([]); // [13.5, 16.5]
  });

  it('a range without a high extends without limit upwards', async () => {
    const p = api.newProject();
    const id = await assessment(p, range(70));
    expect(await probability(p, 'gt1000')).toEqual([id]);
    expect(await probability(p, 'sa60')).toEqual([id]);
    expect(await probability(p, 'lt80')).toEqual([id]);
    expect(await probability(p, 'le69')).toEqual([]);
    expect(await probability(p, 'eb1000')).toEqual([]);
    expect(await probability(p, 'eq70')).toEqual([]);
    expect(await probability(p, 'ne70')).toEqual([id]);
  });

  it('a range without a low extends without limit downwards', async () => {
    const p = api.newProject();
    const id = await assessment(p, range(undefined, 10));
    expect(await probability(p, 'lt-1000')).toEqual([id]);
    expect(await probability(p, 'gt5')).toEqual([id]);
    expect(await probability(p, 'gt10')).toEqual([]);
    expect(await probability(p, 'eb11')).toEqual([id]);
    expect(await probability(p, 'sa-1000')).toEqual([]);
    expect(await probability(p, 'ap-1000')).toEqual([id]);
  });

  it('a decimal probability matches as before, beside ranges', async () => {
    const p = api.newProject();
    const decimal = await assessment(p, 30);
    const span = await assessment(p, range(20, 40));
    expect(await probability(p, '30')).toEqual([decimal]);
    expect(await probability(p, 'ne30')).toEqual([span]);
    expect(await probability(p, 'gt25')).toEqual(sorted(decimal, span));
    expect(await probability(p, 'sa25')).toEqual([decimal]);
    expect(await probability(p, 'eb35')).toEqual([decimal]);
  });

  it('commas OR range comparisons', async () => {
    const p = api.newProject();
    const high = await assessment(p, range(60, 80));
    const low = await assessment(p, range(1, 5));
    await assessment(p, range(20, 40));
    expect(await probability(p, 'sa50,eb10')).toEqual(sorted(high, low));
  });

  it('a resource matches when any of its predictions does', async () => {
    const p = api.newProject();
    const id = await assessment(p, 5, range(60, 80));
    expect(await probability(p, 'sa50')).toEqual([id]);
    expect(await probability(p, '5')).toEqual([id]);
  });

  it(':missing counts Range values', async () => {
    const p = api.newProject();
    const span = await assessment(p, range(20, 40));
    const decimal = await assessment(p, 30);
    const none = await assessment(p);
    const empty = await assessment(p, { low: { unit: '%' } });
    expect(await found(p, '/RiskAssessment?probability:missing=false')).toEqual(sorted(span, decimal));
    expect(await found(p, '/RiskAssessment?probability:missing=true')).toEqual(sorted(none, empty));
  });

  it('a reversed Range (low above high) is refused: invariant rng-2', async () => {
    const p = api.newProject();
    const res = await p.post('/RiskAssessment', {
      resourceType: 'RiskAssessment',
      status: 'final',
      subject: { reference: 'Patient/example' },
      prediction: [{ probabilityRange: range(40, 20) }],
    });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toMatch(/^rng-2: /);
  });

  it('_sort=probability orders a Range by its low, an open low first', async () => {
    const p = api.newProject();
    const wide = await assessment(p, range(10, 90));
    const forty = await assessment(p, 40);
    const narrow = await assessment(p, range(20, 50));
    const open = await assessment(p, range(undefined, 12));
    expect(matchIds(await p.get('/RiskAssessment?_sort=probability'))).toEqual([open, wide, narrow, forty]);
  });

  it('_sort=-probability orders a Range by its high, an open high first', async () => {
    const p = api.newProject();
    const wide = await assessment(p, range(10, 90));
    const forty = await assessment(p, 40);
    const narrow = await assessment(p, range(20, 50));
    const open = await assessment(p, range(30));
    expect(matchIds(await p.get('/RiskAssessment?_sort=-probability'))).toEqual([open, wide, narrow, forty]);
  });

  it('an update from a Range to a decimal replaces the range', async () => {
    const p = api.newProject();
    const id = await assessment(p, range(20, 40));
    expect(await probability(p, 'gt35')).toEqual([id]);
    const current = (await p.get(`/RiskAssessment/${id}`)).body as Json;
    const res = await p.put(`/RiskAssessment/${id}`, { ...current, prediction: [{ probabilityDecimal: 25 }] });
    expect(res.status, res.text).toBe(200);
    expect(await probability(p, 'gt35')).toEqual([]);
    expect(await probability(p, '25')).toEqual([id]);
  });

  it("a project's own number parameter on a Range compares it as a range", async () => {
    const p = api.newProject();
    await create(p, {
      resourceType: 'SearchParameter',
      url: 'http://example.org/fhir/SearchParameter/value-number-range',
      name: 'value-number-range',
      status: 'active',
      description: 'Observation.valueRange as numbers',
      code: 'value-number-range',
      base: ['Observation'],
      type: 'number',
      expression: 'Observation.value.as(Range)',
    });
    const normal = await create(p, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'x' },
      valueRange: { low: { value: 4, system: UCUM, code: 'mmol/L' }, high: { value: 6, system: UCUM, code: 'mmol/L' } },
    });
    expect(await found(p, '/Observation?value-number-range=gt5')).toEqual([normal]);
    expect(await found(p, '/Observation?value-number-range=gt7')).toEqual([]);
    expect(await found(p, '/Observation?value-number-range=eb7')).toEqual([normal]);
  });

  it('$reindex gives a Range its row back', async () => {
    const p = api.newProject();
    const id = await assessment(p, range(20, 40));
    // As if written before migration 0013 (a Range then had no row).
    await api.server.services.db.execute(`DELETE FROM number_index WHERE "resourceType" = 'RiskAssessment' AND "resourceId" = $1`, [id]);
    expect(await probability(p, 'gt30')).toEqual([]);
    const res = await api.superAdmin.post('/$reindex', {
      resourceType: 'Parameters',
      parameter: [
        { name: 'project', valueString: p.projectId },
        { name: 'type', valueCode: 'RiskAssessment' },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(await probability(p, 'gt30')).toEqual([id]);
  });
});
