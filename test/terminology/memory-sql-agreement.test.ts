import { beforeAll, describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';
import { out, SYSTEM, withAnimals, withValueSet } from './fixtures.js';

/**
 * The membership rules run in memory for code systems held there and in SQL for the others
 * (src/terminology/cache.ts, in-memory.ts, membership.ts). One server here keeps every code system
 * in SQL (TERMINOLOGY_MEMORY_CONCEPTS=0, read on its first terminology request), the other in
 * memory: both must give the same expansions and the same $validate-code answers.
 */
process.env.TERMINOLOGY_MEMORY_CONCEPTS = '0';
const inSql = await useTestServer();
const inMemory = await useTestServer();

const VS = 'http://flint.test/ValueSet/agreement';
const CODES = ['animal', 'mammal', 'dog', 'puppy', 'cat', 'bird', 'parrot', 'plant', 'tree', 'moss', 'unknown'];

const composes: Record<string, unknown> = {
  'whole system': { include: [{ system: SYSTEM }] },
  'concept list': { include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'tree', display: 'Oak' }] }] },
  'is-a': { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] },
  'descendent-of': { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'descendent-of', value: 'animal' }] }] },
  'is-not-a': { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-not-a', value: 'animal' }] }] },
  generalizes: { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'generalizes', value: 'puppy' }] }] },
  'property =': { include: [{ system: SYSTEM, filter: [{ property: 'color', op: '=', value: 'brown' }] }] },
  'property in': { include: [{ system: SYSTEM, filter: [{ property: 'color', op: 'in', value: 'brown,green' }] }] },
  'property not-in': { include: [{ system: SYSTEM, filter: [{ property: 'color', op: 'not-in', value: 'brown' }] }] },
  'property exists': { include: [{ system: SYSTEM, filter: [{ property: 'color', op: 'exists', value: 'true' }] }] },
  'property does not exist': { include: [{ system: SYSTEM, filter: [{ property: 'legs', op: 'exists', value: 'false' }] }] },
  'display =': { include: [{ system: SYSTEM, filter: [{ property: 'display', op: '=', value: 'Dog' }] }] },
  'display exists': { include: [{ system: SYSTEM, filter: [{ property: 'display', op: 'exists', value: 'true' }] }] },
  'parent =': { include: [{ system: SYSTEM, filter: [{ property: 'parent', op: '=', value: 'plant' }] }] },
  'child in': { include: [{ system: SYSTEM, filter: [{ property: 'child', op: 'in', value: 'puppy,tree' }] }] },
  'code regex': { include: [{ system: SYSTEM, filter: [{ property: 'code', op: 'regex', value: 'p.*' }] }] },
  'two filters': {
    include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'animal' }, { property: 'color', op: 'exists', value: 'true' }] }],
  },
  'with exclude': {
    include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'animal' }] }],
    exclude: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'dog' }] }, { system: SYSTEM, concept: [{ code: 'bird' }] }],
  },
};

interface Answers {
  expansion: unknown;
  page: unknown;
  text: unknown;
  validation: Record<string, unknown>;
}

async function answers(client: ProjectClient, compose: unknown): Promise<Answers> {
  await withValueSet(client, VS, compose);
  const url = encodeURIComponent(VS);
  const expansion = (await client.get(`/ValueSet/$expand?url=${url}&excludeNested=true`)).body.expansion;
  const page = (await client.get(`/ValueSet/$expand?url=${url}&offset=1&count=2`)).body.expansion;
  const text = (await client.get(`/ValueSet/$expand?url=${url}&filter=ar`)).body.expansion;
  const validation: Record<string, unknown> = {};
  for (const code of CODES) {
    const res = await client.get(`/ValueSet/$validate-code?url=${url}&system=${encodeURIComponent(SYSTEM)}&code=${code}&abstract=true`);
    validation[code] = [out(res.body, 'result')[0]?.valueBoolean, out(res.body, 'display')[0]?.valueString];
  }
  const strip = (e: any) => ({ total: e.total, offset: e.offset, contains: e.contains });
  return { expansion: strip(expansion), page: strip(page), text: strip(text), validation };
}

beforeAll(async () => {
  // The SQL server reads the setting on its first terminology request; the other never sees it.
  const warm = await inSql.newProject().get('/CodeSystem/$lookup?system=http://hl7.org/fhir/administrative-gender&code=male');
  expect(warm.status).toBe(200);
  delete process.env.TERMINOLOGY_MEMORY_CONCEPTS;
});

describe('membership in memory and in SQL agree', () => {
  for (const [name, compose] of Object.entries(composes)) {
    it(name, async () => {
      const sqlClient = inSql.newProject();
      const memoryClient = inMemory.newProject();
      await withAnimals(sqlClient);
      await withAnimals(memoryClient);
      const fromSql = await answers(sqlClient, compose);
      const fromMemory = await answers(memoryClient, compose);
      expect(fromMemory).toEqual(fromSql);
      // The expansion lists exactly the codes $validate-code accepts.
      const listed = new Set(((fromMemory.expansion as any).contains ?? []).map((c: any) => c.code));
      for (const code of CODES) expect([code, (fromMemory.validation[code] as unknown[])[0]]).toEqual([code, listed.has(code)]);
    });
  }
});
