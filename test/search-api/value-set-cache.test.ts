import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { expandForSearch, ExpansionMemory, MAX_CACHED_EXPANSIONS } from '../../src/search/value-set-expansion.js';
import { projectClient, startServerProcess, useTestServer, type ProjectClient } from '../helpers/server.js';
import { params, SYSTEM, withAnimals, withValueSet } from '../terminology/fixtures.js';
import { create, expectInvalid, found, sorted } from './helpers.js';

/**
 * `:in` / `:not-in` keep value set expansions in memory (src/search/value-set-expansion.ts), per project and
 * canonical url with version; every terminology write makes the next search expand again.
 */

const api = await useTestServer();
const onPostgres = process.env.DATABASE_URL?.startsWith('postgres') === true;

const VS = 'http://flint.test/ValueSet/cached';

const observation = (code: string, system = SYSTEM) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system, code }] },
});

const valueSet = (codes: string[], extra: Record<string, unknown> = {}) => ({
  resourceType: 'ValueSet',
  url: VS,
  status: 'active',
  compose: { include: [{ system: SYSTEM, concept: codes.map((code) => ({ code })) }] },
  ...extra,
});

async function put(client: ProjectClient, resource: Record<string, unknown>): Promise<void> {
  const res = await client.put(`/${resource.resourceType}/${resource.id}`, resource);
  expect(res.status, res.text).toBe(200);
}

describe('value set expansions kept between searches', () => {
  it('a code added to or removed from the ValueSet changes the next search', async () => {
    const p = api.newProject();
    await withAnimals(p);
    const id = await create(p, valueSet(['dog']));
    const dog = await create(p, observation('dog'));
    const cat = await create(p, observation('cat'));
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([dog]);
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([dog]);

    await put(p, { ...valueSet(['dog', 'cat']), id });
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual(sorted(dog, cat));
    expect(await found(p, `/Observation?code:not-in=${VS}`)).toEqual([]);

    await put(p, { ...valueSet(['cat']), id });
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([cat]);
    expect(await found(p, `/Observation?code:not-in=${VS}`)).toEqual([dog]);
  });

  it('a CodeSystem change reaches an is-a ValueSet over it', async () => {
    const p = api.newProject();
    const codeSystem = await withAnimals(p);
    await withValueSet(p, VS, { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const cat = await create(p, observation('cat'));
    const hamster = await create(p, observation('hamster'));
    const wolf = await create(p, observation('wolf'));
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([cat]);

    // An update of the resource: hamster becomes a mammal.
    const current = (await p.get(`/CodeSystem/${codeSystem}`)).body;
    current.concept.push({ code: 'hamster', display: 'Hamster', property: [{ code: 'parent', valueCode: 'mammal' }] });
    await put(p, current);
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual(sorted(cat, hamster));

    // CodeSystem/$import: wolf becomes one too, without a new version of the resource.
    const imported = await p.post(
      '/CodeSystem/$import',
      params(
        { name: 'system', valueUri: SYSTEM },
        { name: 'concept', valueCoding: { system: SYSTEM, code: 'wolf', display: 'Wolf' } },
        { name: 'property', part: [{ name: 'code', valueCode: 'wolf' }, { name: 'property', valueCode: 'parent' }, { name: 'value', valueCode: 'mammal' }] },
      ),
    );
    expect(imported.status, imported.text).toBe(200);
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual(sorted(cat, hamster, wolf));

    // A concept taken out of the hierarchy leaves the value set.
    const again = (await p.get(`/CodeSystem/${codeSystem}`)).body;
    again.concept = again.concept.filter((concept: { code: string }) => concept.code !== 'hamster');
    await put(p, again);
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([cat]);
  });

  it('a deleted ValueSet is unknown to the next search, and one created later is found', async () => {
    const p = api.newProject();
    await withAnimals(p);
    const dog = await create(p, observation('dog'));
    expectInvalid(await p.get(`/Observation?code:in=${VS}`), VS);
    const id = await create(p, valueSet(['dog']));
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([dog]);
    expect((await p.delete(`/ValueSet/${id}`)).status).toBe(200);
    expectInvalid(await p.get(`/Observation?code:in=${VS}`), VS);
  });

  it('keeps the expansions of each project and each version apart', async () => {
    const a = api.newProject();
    const b = api.newProject();
    await withAnimals(a);
    await withAnimals(b);
    await create(a, valueSet(['dog'], { version: '1' }));
    await create(a, valueSet(['cat'], { version: '2' }));
    await create(b, valueSet(['parrot']));
    const aDog = await create(a, observation('dog'));
    const aCat = await create(a, observation('cat'));
    await create(b, observation('dog'));
    const bParrot = await create(b, observation('parrot'));
    for (let round = 0; round < 2; round++) {
      expect(await found(a, `/Observation?code:in=${encodeURIComponent(`${VS}|1`)}`)).toEqual([aDog]);
      expect(await found(a, `/Observation?code:in=${encodeURIComponent(`${VS}|2`)}`)).toEqual([aCat]);
      expect(await found(b, `/Observation?code:in=${VS}`)).toEqual([bParrot]);
    }
  });

  it('a second search with the same value set reuses the expansion', async () => {
    const p = api.newProject();
    await withAnimals(p);
    await create(p, valueSet(['dog', 'cat']));
    const identity = { projectId: p.projectId, superAdmin: false };
    const db = api.server.services.db;
    // A terminology write of another test on the shared server starts a new memory between two
    // calls now and then: the pair is tried up to three times, so a cache that never reuses still fails.
    let first = await expandForSearch(db, identity, VS, 'code:in');
    let second = await expandForSearch(db, identity, VS, 'code:in');
    for (let tries = 1; tries < 3 && second !== first; tries++) {
      first = second;
      second = await expandForSearch(db, identity, VS, 'code:in');
    }
    expect(Array.isArray(first) && first.map((m) => m.code).sort()).toEqual(['cat', 'dog']);
    expect(second).toBe(first);
    // A terminology write (here a ValueSet of another url) starts a new memory.
    await withValueSet(p, `${VS}-other`, { include: [{ system: SYSTEM, concept: [{ code: 'tree' }] }] });
    const after = await expandForSearch(db, identity, VS, 'code:in');
    expect(after).not.toBe(first);
    expect(after).toEqual(first);
  });
});

describe('ExpansionMemory', () => {
  it('keeps at most MAX_CACHED_EXPANSIONS, dropping the least recently used', async () => {
    const memory = new ExpansionMemory();
    const compute = (code: string) => async () => [{ system: SYSTEM, code }];
    const first = await memory.get('vs-0', compute('0'));
    for (let i = 1; i <= MAX_CACHED_EXPANSIONS + 10; i++) {
      await memory.get(`vs-${i}`, compute(String(i)));
      // vs-0 stays the most recently used.
      if (i % 100 === 0) expect(await memory.get('vs-0', compute('again'))).toBe(first);
    }
    expect(memory.size).toBe(MAX_CACHED_EXPANSIONS);
    expect(await memory.get('vs-0', compute('again'))).toBe(first);
    expect(await memory.get('vs-1', compute('recomputed'))).toEqual([{ system: SYSTEM, code: 'recomputed' }]);
  });

  it('does not keep an expansion that failed', async () => {
    const memory = new ExpansionMemory();
    await expect(memory.get('vs', () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    await new Promise((resolve) => setImmediate(resolve));
    expect(memory.size).toBe(0);
    expect(await memory.get('vs', async () => [])).toEqual([]);
  });
});

describe.runIf(onPostgres)('value set expansions on two servers', () => {
  let other: { url: string; child: ChildProcess } | undefined;
  afterAll(() => {
    other?.child.kill('SIGTERM');
  });

  it('a ValueSet written through one server changes the next search on the other at once', async () => {
    // Another process, and another notice channel: only the terminology revision row links the two.
    other = await startServerProcess({ CACHE_NAMESPACE: `test_${randomUUID().replace(/-/g, '').slice(0, 12)}` });
    const p = api.newProject();
    const token = await p.token();
    const elsewhere = projectClient(`${other!.url}/fhir/R4`, p.projectId, async () => token);
    await withAnimals(p);
    const id = await create(p, valueSet(['dog']));
    const dog = await create(p, observation('dog'));
    const cat = await create(p, observation('cat'));
    expect(await found(elsewhere, `/Observation?code:in=${VS}`)).toEqual([dog]);
    await put(p, { ...valueSet(['cat']), id });
    expect(await found(elsewhere, `/Observation?code:in=${VS}`)).toEqual([cat]);
    // And the other way round.
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([cat]);
    await put(elsewhere, { ...valueSet(['dog', 'cat']), id });
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual(sorted(dog, cat));
  }, 150_000);
});
