import { describe, expect, it } from 'vitest';
import { getResourceTypes, getSearchParametersFor } from '../../src/fhir/definitions.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, matchIds } from './helpers.js';

/**
 * What search does not offer is refused with 400 and an OperationOutcome that says so (or, under
 * `Prefer: handling=lenient`, ignored and reported as a warning), never a 500.
 */

const api = await useTestServer();

function expectNotSupported(res: { status: number; body: any; text: string }, mention: string): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('not-supported');
  expect(res.body.issue[0].details.text).toContain(mention);
}

/**
 * Runs `queries` with a few requests in flight; returns the answers that are not a 200 or a 4xx
 * OperationOutcome with a text (with `only200`, that are not a 200).
 */
async function problems(client: ProjectClient, queries: string[], headers: Record<string, string> = {}, only200 = false): Promise<string[]> {
  const bad: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < queries.length) {
        const query = queries[next++];
        const res = await client.get(query, headers);
        const outcome = res.status >= 400 && res.status < 500 && res.body?.resourceType === 'OperationOutcome' && res.body.issue?.[0]?.details?.text;
        if (res.status !== 200 && (only200 || !outcome)) bad.push(`${res.status} ${query}: ${res.text.slice(0, 200)}`);
      }
    }),
  );
  return bad;
}

describe('unsupported search features', () => {
  it.each([
    ['_text', 'cancer'],
    ['_content', 'cancer'],
    ['_list', 'List/1'],
    ['_query', 'everything'],
    ['_contained', 'true'],
  ])('%s is 400 not-supported naming it', async (name, value) => {
    const p = api.newProject();
    expectNotSupported(await p.get(`/Patient?${name}=${encodeURIComponent(value)}`), name);
  });

  it('a special parameter (Location near) is 400 not-supported', async () => {
    const p = api.newProject();
    expectNotSupported(await p.get('/Location?near=42.25|-83.69|10|km'), 'near');
  });

  it('under Prefer: handling=lenient they are ignored and reported as warnings', async () => {
    const p = api.newProject();
    const a = await create(p, { resourceType: 'Patient', gender: 'female' });
    const res = await p.get('/Patient?_list=x&_text=y&gender=female', { Prefer: 'handling=lenient' });
    expect(matchIds(res)).toEqual([a]);
    const outcome = res.body.entry.find((e: any) => e.search.mode === 'outcome').resource;
    expect(outcome.issue.map((i: any) => [i.severity, i.code])).toEqual([
      ['warning', 'not-supported'],
      ['warning', 'not-supported'],
    ]);
    expect(res.body.link.find((l: any) => l.relation === 'self').url).not.toContain('_list');
  });

  it('an unknown modifier is 400 saying it is unknown, a known one that does not apply says so', async () => {
    const p = api.newProject();
    const unknown = await p.get('/Patient?gender:bogus=x');
    expect(unknown.status).toBe(400);
    expect(unknown.body.issue[0].details.text).toContain('Unknown modifier :bogus');
    const misplaced = await p.get('/Patient?gender:exact=x');
    expect(misplaced.status).toBe(400);
    expect(misplaced.body.issue[0].details.text).toContain('Modifier :exact is not supported on token parameter gender');
  });

  it('every parameter of every resource type gives 200 or a 400 OperationOutcome, never a 500', async () => {
    const p = api.newProject();
    const queries = getResourceTypes().flatMap((type) => getSearchParametersFor(type).map((sp) => `/${type}?${sp.code}=x`));
    expect(queries.length).toBeGreaterThan(2000);
    expect(await problems(p, queries)).toEqual([]);
  }, 120_000);

  it('every modifier on every Observation parameter gives 200 or a 400 OperationOutcome; lenient gives 200', async () => {
    const p = api.newProject();
    const modifiers = ['', ':missing', ':exact', ':contains', ':text', ':not', ':above', ':below', ':in', ':not-in', ':identifier', ':of-type', ':Patient', ':bogus'];
    const values = ['x', 'gt5', 'a$b', ''];
    const queries = getSearchParametersFor('Observation').flatMap((sp) =>
      modifiers.flatMap((modifier) => values.map((value) => `/Observation?${sp.code}${modifier}=${encodeURIComponent(value)}`)),
    );
    expect(await problems(p, queries)).toEqual([]);
    const lenient = await problems(p, queries.filter((_, i) => i % 3 === 0), { Prefer: 'handling=lenient' }, true);
    expect(lenient).toEqual([]);
  }, 120_000);
});
