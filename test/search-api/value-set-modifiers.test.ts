import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { SYSTEM, withAnimals, withValueSet } from '../terminology/fixtures.js';
import { create, expectInvalid, found, matchIds, sorted } from './helpers.js';

/** Token `:in` and `:not-in` (search.html#token): membership in a ValueSet, expanded by the terminology service. */

const api = await useTestServer();

const GENDERS = 'http://hl7.org/fhir/ValueSet/administrative-gender';
const VS = 'http://flint.test/ValueSet/search';

const observation = (code: string, system = SYSTEM) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system, code }] },
});

/** A project with the animals code system and a value set of `compose`. */
async function withTerminology(compose: unknown, url = VS): Promise<ProjectClient> {
  const p = api.newProject();
  await withAnimals(p);
  await withValueSet(p, url, compose);
  return p;
}

describe('token :in', () => {
  it('matches codes of a shipped R4 value set', async () => {
    const p = api.newProject();
    const male = await create(p, { resourceType: 'Patient', gender: 'male' });
    const female = await create(p, { resourceType: 'Patient', gender: 'female' });
    await create(p, { resourceType: 'Patient' });
    expect(await found(p, `/Patient?gender:in=${GENDERS}`)).toEqual(sorted(male, female));
  });

  it('matches codes of a value set of the project, listed by concept', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'cat' }] }] });
    const dog = await create(p, observation('dog'));
    const cat = await create(p, observation('cat'));
    await create(p, observation('parrot'));
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual(sorted(dog, cat));
  });

  it('expands filters through the code system hierarchy (is-a)', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const puppy = await create(p, observation('puppy'));
    const mammal = await create(p, observation('mammal'));
    await create(p, observation('parrot'));
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual(sorted(puppy, mammal));
  });

  it('needs a coding with a system to have the member system', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    await create(p, observation('dog', 'http://other.example.org'));
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([]);
  });

  it('matches a value without a system (a code element) by its code', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    const systemless = await create(p, { resourceType: 'Observation', status: 'final', code: { coding: [{ code: 'dog' }] } });
    await create(p, { resourceType: 'Observation', status: 'final', code: { coding: [{ code: 'cat' }] } });
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([systemless]);
  });

  it('matches when any coding of a CodeableConcept is a member', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    const both = await create(p, {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '1234-5' }, { system: SYSTEM, code: 'dog' }] },
    });
    expect(await found(p, `/Observation?code:in=${VS}`)).toEqual([both]);
  });

  it('takes a version after |', async () => {
    const p = api.newProject();
    await withAnimals(p);
    const res = await p.post('/ValueSet', {
      resourceType: 'ValueSet',
      url: VS,
      version: '2',
      status: 'active',
      compose: { include: [{ system: SYSTEM, concept: [{ code: 'cat' }] }] },
    });
    expect(res.status, res.text).toBe(201);
    const cat = await create(p, observation('cat'));
    expect(await found(p, `/Observation?code:in=${encodeURIComponent(`${VS}|2`)}`)).toEqual([cat]);
  });

  it('commas are OR between value sets', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    await withValueSet(p, `${VS}-2`, { include: [{ system: SYSTEM, concept: [{ code: 'tree' }] }] });
    const dog = await create(p, observation('dog'));
    const tree = await create(p, observation('tree'));
    await create(p, observation('moss'));
    expect(await found(p, `/Observation?code:in=${VS},${VS}-2`)).toEqual(sorted(dog, tree));
  });

  it('works at the end of a chain', async () => {
    const p = api.newProject();
    const male = await create(p, { resourceType: 'Patient', gender: 'male' });
    const unknown = await create(p, { resourceType: 'Patient' });
    const a = await create(p, { ...observation('dog'), subject: { reference: `Patient/${male}` } });
    await create(p, { ...observation('dog'), subject: { reference: `Patient/${unknown}` } });
    expect(await found(p, `/Observation?subject:Patient.gender:in=${GENDERS}`)).toEqual([a]);
  });

  it('a value set of another project is not visible', async () => {
    const owner = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    expect(owner).toBeDefined();
    const p = api.newProject();
    await create(p, observation('dog'));
    expectInvalid(await p.get(`/Observation?code:in=${VS}`), VS);
  });

  it('counts and estimates totals like any other search', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    for (let i = 0; i < 3; i++) await create(p, observation('dog'));
    await create(p, observation('cat'));
    const accurate = await p.get(`/Observation?code:in=${VS}&_total=accurate&_count=1`);
    expect(accurate.status, accurate.text).toBe(200);
    expect(accurate.body.total).toBe(3);
    const estimate = await p.get(`/Observation?code:in=${VS}&_total=estimate&_count=1`);
    expect(estimate.status, estimate.text).toBe(200);
    expect(estimate.body.total).toBeGreaterThanOrEqual(2);
  });

  it('expands the value set once per search', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }] }] });
    await create(p, observation('dog'));
    const db = api.server.services.db;
    const statements = async (query: string): Promise<number> => {
      await p.get(query); // warm: token, shipped code systems
      const before = db.statementCount;
      expect((await p.get(query)).status).toBe(200);
      return db.statementCount - before;
    };
    const once = await statements(`/Observation?code:in=${VS}`);
    const twice = await statements(`/Observation?code:in=${VS}&code:in=${VS}`);
    expect(twice).toBe(once);
  });
});

describe(':in in AccessPolicy criteria', () => {
  it('narrows searches and refuses writes outside the value set', async () => {
    const admin = api.newProject();
    await withValueSet(admin, VS, { include: [{ system: 'http://hl7.org/fhir/administrative-gender', concept: [{ code: 'female' }] }] });
    const female = await create(admin, { resourceType: 'Patient', gender: 'female' });
    await create(admin, { resourceType: 'Patient', gender: 'male' });
    const policy = await create(admin, {
      resourceType: 'AccessPolicy',
      name: 'female patients only',
      resource: [{ resourceType: 'Patient', criteria: `Patient?gender:in=${VS}` }],
    });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy}` });
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    expect(await found(client, '/Patient')).toEqual([female]);
    expect((await client.post('/Patient', { resourceType: 'Patient', gender: 'male' })).status).toBe(403);
    expect((await client.post('/Patient', { resourceType: 'Patient', gender: 'female' })).status).toBe(201);
  });
});

describe('token :not-in', () => {
  it('matches resources with no code in the value set, and those without a value', async () => {
    const p = await withTerminology({ include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'cat' }] }] });
    await create(p, observation('dog'));
    const parrot = await create(p, observation('parrot'));
    expect(await found(p, `/Observation?code:not-in=${VS}`)).toEqual([parrot]);
    const male = await create(p, { resourceType: 'Patient', gender: 'male' });
    const none = await create(p, { resourceType: 'Patient' });
    expect(male).toBeDefined();
    expect(await found(p, `/Patient?gender:not-in=${GENDERS}`)).toEqual([none]);
  });
});

describe('token :in errors', () => {
  it('an unknown value set is 400 naming it', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient?gender:in=http://example.org/ValueSet/nope');
    expectInvalid(res, 'http://example.org/ValueSet/nope');
    expect(res.body.issue[0].expression).toEqual(['gender:in']);
  });

  it('under Prefer: handling=lenient an unknown value set is ignored and reported', async () => {
    const p = api.newProject();
    const a = await create(p, { resourceType: 'Patient', gender: 'male' });
    const res = await p.get('/Patient?gender:in=http://example.org/ValueSet/nope', { Prefer: 'handling=lenient' });
    expect(matchIds(res)).toEqual([a]);
    const outcome = res.body.entry.find((e: any) => e.search.mode === 'outcome');
    expect(outcome.resource.issue[0].severity).toBe('warning');
    expect(outcome.resource.issue[0].details.text).toContain('http://example.org/ValueSet/nope');
  });

  it('a value set that cannot be expanded (unknown code system) is 400 saying why', async () => {
    const p = api.newProject();
    await withValueSet(p, VS, { include: [{ system: 'http://example.org/unknown-system', filter: [{ property: 'concept', op: 'is-a', value: 'x' }] }] });
    const res = await p.get(`/Observation?code:in=${VS}`);
    expectInvalid(res, 'http://example.org/unknown-system');
  });

  it('a value set of more than 10,000 codes is 400 too-costly, also under lenient handling', async () => {
    const p = api.newProject();
    const concept = Array.from({ length: 10_001 }, (_, i) => ({ code: `c${i}` }));
    const cs = await p.post('/CodeSystem', { resourceType: 'CodeSystem', url: 'http://flint.test/CodeSystem/big', status: 'active', content: 'complete', concept });
    expect(cs.status, cs.text.slice(0, 300)).toBe(201);
    await withValueSet(p, VS, { include: [{ system: 'http://flint.test/CodeSystem/big' }] });
    for (const headers of [{}, { Prefer: 'handling=lenient' }] as Record<string, string>[]) {
      const res = await p.get(`/Observation?code:in=${VS}`, headers);
      expect(res.status, res.text).toBe(400);
      expect(res.body.issue[0].code).toBe('too-costly');
      expect(res.body.issue[0].details.text).toContain('10000');
    }
  });

  it('an empty value is 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?gender:in='), 'gender:in');
  });

  it(':in on a parameter that is not a token is 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get(`/Patient?family:in=${GENDERS}`), ':in');
  });
});
