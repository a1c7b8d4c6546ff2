import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, sorted } from './helpers.js';

/**
 * A quantity component of a composite parameter against a Range value (`context-type-quantity`:
 * useContext.value is a Quantity or a Range): the search value is compared with the range as
 * search.html#prefix says, within the same useContext as the other component.
 */

const api = await useTestServer();

const USAGE = 'http://terminology.hl7.org/CodeSystem/usage-context-type';
const UCUM = 'http://unitsofmeasure.org';

const years = (value: number) => ({ value, unit: 'years', system: UCUM, code: 'a' });

type Json = Record<string, unknown>;

function useContext(code: string, value: Json): Json {
  return { code: { system: USAGE, code }, ...value };
}

async function valueSet(client: ProjectClient, ...contexts: Json[]): Promise<string> {
  return create(client, { resourceType: 'ValueSet', status: 'active', useContext: contexts });
}

/** Ids of the project's ValueSets matching `context-type-quantity=<value>`. */
function search(client: ProjectClient, value: string): Promise<string[]> {
  return found(client, `/ValueSet?context-type-quantity=${encodeURIComponent(value)}`);
}

describe('context-type-quantity with Range values', () => {
  it('compares each prefix with the range [low, high], and a Quantity as before', async () => {
    const p = api.newProject();
    const adults = await valueSet(p, useContext('age', { valueRange: { low: years(18), high: years(65) } }));
    const thirty = await valueSet(p, useContext('age', { valueQuantity: years(30) }));
    const cases: [string, string[]][] = [
      ['gt60', [adults]],
      ['gt70', []],
      ['lt20', [adults]],
      ['lt10', []],
      ['ge65', [adults]],
      ['le18', [adults]],
      ['sa10', sorted(adults, thirty)],
      ['sa20', [thirty]],
      ['eb70', sorted(adults, thirty)],
      ['eb50', [thirty]],
      ['30', [thirty]],
      ['eq30', [thirty]],
      ['ne30', [adults]],
      ['ap40', [adults]],
      ['ap30', sorted(adults, thirty)],
    ];
    for (const [value, expected] of cases) {
      expect(await search(p, `${USAGE}|age$${value}`), value).toEqual(expected);
    }
  });

  it('a range inside the search value equals it (eq)', async () => {
    const p = api.newProject();
    const narrow = await valueSet(p, useContext('age', { valueRange: { low: years(40.1), high: years(40.4) } }));
    await valueSet(p, useContext('age', { valueRange: { low: years(39), high: years(41) } }));
    expect(await search(p, `${USAGE}|age$40`)).toEqual([narrow]);
    expect(await search(p, `${USAGE}|age$eq40`)).toEqual([narrow]);
  });

  it('a Range open at one end extends without limit on that side', async () => {
    const p = api.newProject();
    const seniors = await valueSet(p, useContext('age', { valueRange: { low: years(65) } }));
    const children = await valueSet(p, useContext('age', { valueRange: { high: years(12) } }));
    expect(await search(p, `${USAGE}|age$gt1000`)).toEqual([seniors]);
    expect(await search(p, `${USAGE}|age$lt50`)).toEqual([children]);
    expect(await search(p, `${USAGE}|age$lt-1000`)).toEqual([children]);
    expect(await search(p, `${USAGE}|age$sa60`)).toEqual([seniors]);
    expect(await search(p, `${USAGE}|age$eb20`)).toEqual([children]);
    expect(await search(p, `${USAGE}|age$eq10`)).toEqual([]);
    expect(await search(p, `${USAGE}|age$ne10`)).toEqual(sorted(seniors, children));
    expect(await search(p, `${USAGE}|age$ap70`)).toEqual([seniors]);
  });

  it('matches the unit of the range when the value names one', async () => {
    const p = api.newProject();
    const adults = await valueSet(p, useContext('age', { valueRange: { low: years(18), high: years(65) } }));
    expect(await search(p, `${USAGE}|age$gt60|${UCUM}|a`)).toEqual([adults]);
    expect(await search(p, `${USAGE}|age$gt60||a`)).toEqual([adults]);
    expect(await search(p, `${USAGE}|age$gt60|${UCUM}|mo`)).toEqual([]);
  });

  it('takes the code and the range from the same useContext', async () => {
    const p = api.newProject();
    await valueSet(p, useContext('focus', { valueRange: { low: years(18), high: years(65) } }), useContext('age', { valueQuantity: years(5) }));
    const both = await valueSet(p, useContext('age', { valueRange: { low: years(18), high: years(65) } }));
    expect(await search(p, `${USAGE}|age$gt60`)).toEqual([both]);
    expect(await search(p, `${USAGE}|focus$gt60`)).not.toContain(both);
    expect(await found(p, '/ValueSet?context-type-quantity:missing=false')).toHaveLength(2);
  });

  it('works on every resource type with useContext (PlanDefinition, Questionnaire)', async () => {
    const p = api.newProject();
    const plan = await create(p, { resourceType: 'PlanDefinition', status: 'active', useContext: [useContext('age', { valueRange: { low: years(50), high: years(75) } })] });
    await create(p, { resourceType: 'PlanDefinition', status: 'active', useContext: [useContext('age', { valueRange: { low: years(0), high: years(17) } })] });
    const questionnaire = await create(p, { resourceType: 'Questionnaire', status: 'active', useContext: [useContext('age', { valueRange: { low: years(50) } })] });
    expect(await found(p, `/PlanDefinition?context-type-quantity=${encodeURIComponent(`${USAGE}|age$ge60`)}`)).toEqual([plan]);
    expect(await found(p, `/Questionnaire?context-type-quantity=${encodeURIComponent(`${USAGE}|age$ge60`)}`)).toEqual([questionnaire]);
  });

  it('an update from a Quantity to a Range replaces the rows', async () => {
    const p = api.newProject();
    const id = await valueSet(p, useContext('age', { valueQuantity: years(30) }));
    expect(await search(p, `${USAGE}|age$gt60`)).toEqual([]);
    const res = await p.put(`/ValueSet/${id}`, {
      resourceType: 'ValueSet',
      id,
      status: 'active',
      useContext: [useContext('age', { valueRange: { low: years(18), high: years(65) } })],
    });
    expect(res.status, res.text).toBe(200);
    expect(await search(p, `${USAGE}|age$gt60`)).toEqual([id]);
    expect(await search(p, `${USAGE}|age$30`)).toEqual([]);
  });

  it('a Range without any value gives no row', async () => {
    const p = api.newProject();
    await valueSet(p, useContext('age', { valueRange: { low: { unit: 'years' } } }));
    expect(await found(p, '/ValueSet?context-type-quantity:missing=true')).toHaveLength(1);
  });
});
