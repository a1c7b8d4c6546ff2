import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, createInBatches, matchesByOffset, matchIds } from './helpers.js';

/**
 * A search without _sort in one project whose only filter is a number or quantity comparison
 * (`Observation?value-quantity=gt60`) reads its page from the index in the index's order, by least
 * matching value, then id, when no row of the parameter holds a Range (pages/numeric.ts, numericDriver).
 * These pin what that must keep: the prefixes, units, each resource once, the order across pages.
 */
const api = await useTestServer();

function observation(value: number, extra: Record<string, unknown> = {}) {
  return {
    resourceType: 'Observation',
    status: 'final',
    code: { text: 'weight' },
    valueQuantity: { value, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
    ...extra,
  };
}

describe('a search by one number or quantity comparison', () => {
  it('lists the matches by value, then id, across pages larger than the rows a page reads', async () => {
    const p = api.newProject();
    const values = Array.from({ length: 130 }, (_, i) => (i * 37) % 130);
    const ids = await createInBatches(p, values.map((v) => observation(v + 1)));
    const expected = values.map((v, i) => ({ v, id: ids[i] })).sort((a, b) => a.v - b.v).map((m) => m.id);
    expect(await matchesByOffset(p, '/Observation?value-quantity=gt0', 20, 130)).toEqual(expected);
  });

  it('applies the prefixes and the unit as the general search does', async () => {
    const p = api.newProject();
    const [ten, twenty, thirty] = [await create(p, observation(10)), await create(p, observation(20)), await create(p, observation(30))];
    const pounds = await create(p, observation(25, { valueQuantity: { value: 25, unit: 'lb', system: 'http://unitsofmeasure.org', code: '[lb_av]' } }));
    expect(matchIds(await p.get('/Observation?value-quantity=gt15'))).toEqual([twenty, pounds, thirty]);
    expect(matchIds(await p.get('/Observation?value-quantity=lt25'))).toEqual([ten, twenty]);
    expect(matchIds(await p.get('/Observation?value-quantity=20'))).toEqual([twenty]);
    expect(matchIds(await p.get('/Observation?value-quantity=gt15|http://unitsofmeasure.org|kg'))).toEqual([twenty, thirty]);
  });

  it('lists a resource with several matching values once, at its least', async () => {
    const p = api.newProject();
    const component = (value: number) => ({ code: { text: 'c' }, valueQuantity: { value, unit: 'kg' } });
    const both = await create(p, observation(90, { component: [component(70)] }));
    const one = await create(p, observation(80));
    expect(matchIds(await p.get('/Observation?combo-value-quantity=gt60'))).toEqual([both, one]);
  });
});
