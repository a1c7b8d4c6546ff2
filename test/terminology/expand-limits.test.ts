import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { graphql, onlyError } from '../graphql/resource-helpers.js';
import { SYSTEM, withAnimals, withValueSet } from './fixtures.js';

// The animals code system has 10 concepts: twice the expansion limit of this server.
const api = await useTestServer({ EXPAND_MAX_CODES: '5' });
const VS = 'http://flint.test/ValueSet/all-animals';
const url = encodeURIComponent(VS);

async function withAllAnimals(): Promise<ProjectClient> {
  const client = api.newProject();
  await withAnimals(client);
  await withValueSet(client, VS, { include: [{ system: SYSTEM }] });
  return client;
}

function expectTooCostly(res: { status: number; body: any }, text: RegExp): void {
  expect(res.status).toBe(400);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('too-costly');
  expect(res.body.issue[0].details.text).toMatch(text);
}

describe('ValueSet/$expand size limit (EXPAND_MAX_CODES)', () => {
  it('refuses an unpaged expansion larger than the limit with 400 too-costly', async () => {
    const client = await withAllAnimals();
    const res = await client.get(`/ValueSet/$expand?url=${url}`);
    expectTooCostly(res, /has 10 codes, more than the 5 one answer may list: page it with offset and count/);
  });

  it('refuses a count above the limit', async () => {
    const client = await withAllAnimals();
    const res = await client.get(`/ValueSet/$expand?url=${url}&count=6`);
    expectTooCostly(res, /count 6 is more than the 5 codes one expansion may list/);
    expect(res.body.issue[0].expression).toEqual(['Parameters.parameter']);
  });

  it('refuses an offset that leaves more codes than the limit', async () => {
    const client = await withAllAnimals();
    const res = await client.get(`/ValueSet/$expand?url=${url}&offset=4`);
    expectTooCostly(res, /has 10 codes/);
  });

  it('pages the same value set with offset and count within the limit', async () => {
    const client = await withAllAnimals();
    const first = await client.get(`/ValueSet/$expand?url=${url}&count=5`);
    const second = await client.get(`/ValueSet/$expand?url=${url}&offset=5&count=5`);
    expect(first.status, first.text).toBe(200);
    expect(second.status, second.text).toBe(200);
    expect(first.body.expansion.total).toBe(10);
    const codes = [...first.body.expansion.contains, ...second.body.expansion.contains].map((c: any) => c.code);
    expect(new Set(codes).size).toBe(10);
  });

  it('lists an expansion within the limit without paging', async () => {
    const client = api.newProject();
    await withAnimals(client);
    await withValueSet(client, VS, { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const res = await client.get(`/ValueSet/$expand?url=${url}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.expansion.total).toBe(4);
  });

  it('refuses the same over GraphQL (ValueSetExpand) with the OperationOutcome', async () => {
    const client = await withAllAnimals();
    const res = await graphql(api, client, `{ ValueSetExpand(url: "${VS}") { expansion { contains { code } } } }`);
    const error = onlyError(res);
    expect(error.code).toBe('too-costly');
    expect(error.text).toMatch(/has 10 codes, more than the 5/);
    expect(error.path).toEqual(['ValueSetExpand']);
  });
});
