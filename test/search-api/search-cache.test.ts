import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from './helpers.js';

/**
 * Exact counts are kept between requests until a write could change them (src/cache/search-cache.ts).
 * A repeated count runs no statement; every kind of write a count depends on is seen by the next one.
 */
const api = await useTestServer();

const observation = (code: string, subject?: string) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code }] },
  ...(subject ? { subject: { reference: subject } } : {}),
});

const uniqueCode = () => `code-${Math.random().toString(36).slice(2)}`;

async function total(client: ProjectClient, query: string): Promise<number> {
  const res = await client.get(query);
  expect(res.status, res.text).toBe(200);
  return res.body.total as number;
}

async function statementsFor(client: ProjectClient, query: string): Promise<number> {
  const db = api.server.services.db;
  const before = db.statementCount;
  await total(client, query);
  return db.statementCount - before;
}

describe('kept exact counts', () => {
  it('a repeated count runs no count statement', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    for (let i = 0; i < 3; i++) await create(p, observation(code));
    const query = `/Observation?code=http://loinc.org|${code}&_summary=count`;
    const first = await statementsFor(p, query);
    const again = await statementsFor(p, query);
    expect(again).toBeLessThan(first);
    expect(await total(p, query)).toBe(3);
  });

  it('a repeated estimate runs no EXPLAIN', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    for (let i = 0; i < 3; i++) await create(p, observation(code));
    const query = `/Observation?code=http://loinc.org|${code}&_total=estimate&_count=1`;
    const first = await statementsFor(p, query);
    // The page's statement remains, except on the embedded database, which keeps pages too.
    const keepsPages = api.server.services.db.kind === 'pglite';
    expect(await statementsFor(p, query)).toBe(keepsPages ? 0 : first - 1);
  });

  it('a created resource is counted by the next search', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    await create(p, observation(code));
    await create(p, observation(code));
    const query = `/Observation?code=http://loinc.org|${code}&_total=accurate&_count=1`;
    expect(await total(p, query)).toBe(2);
    await create(p, observation(code));
    expect(await total(p, query)).toBe(3);
  });

  it('a deleted resource is no longer counted', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    const ids = [await create(p, observation(code)), await create(p, observation(code))];
    const query = `/Observation?code=http://loinc.org|${code}&_summary=count`;
    expect(await total(p, query)).toBe(2);
    expect((await p.delete(`/Observation/${ids[0]}`)).status).toBe(200);
    expect(await total(p, query)).toBe(1);
  });

  it('an update that stops matching is no longer counted', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    const id = await create(p, observation(code));
    await create(p, observation(code));
    const query = `/Observation?code=http://loinc.org|${code}&_summary=count`;
    expect(await total(p, query)).toBe(2);
    const update = await p.put(`/Observation/${id}`, { ...observation(uniqueCode()), id });
    expect(update.status, update.text).toBe(200);
    expect(await total(p, query)).toBe(1);
  });

  it('a chained count sees a write of the other type', async () => {
    const p = api.newProject();
    const family = `Fam${Math.random().toString(36).slice(2, 8)}`;
    const patient = await create(p, { resourceType: 'Patient', name: [{ family }] });
    const other = await create(p, { resourceType: 'Patient', name: [{ family: 'Someone' }] });
    const code = uniqueCode();
    await create(p, observation(code, `Patient/${patient}`));
    await create(p, observation(code, `Patient/${other}`));
    const query = `/Observation?code=http://loinc.org|${code}&subject:Patient.name=${family}&_summary=count`;
    expect(await total(p, query)).toBe(1);
    const renamed = await p.put(`/Patient/${other}`, { resourceType: 'Patient', id: other, name: [{ family }] });
    expect(renamed.status, renamed.text).toBe(200);
    expect(await total(p, query)).toBe(2);
  });

  it('a write in another project does not change a project\'s count, and a super admin\'s count sees both', async () => {
    const a = api.newProject();
    const b = api.newProject();
    const code = uniqueCode();
    await create(a, observation(code));
    // Both projects exist before the first count (a super admin's count names the projects it sums).
    await create(b, { resourceType: 'Patient' });
    const query = `/Observation?code=http://loinc.org|${code}&_summary=count`;
    expect(await total(a, query)).toBe(1);
    expect(await total(api.superAdmin, query)).toBe(1);
    await create(b, observation(code));
    expect(await total(a, query)).toBe(1);
    expect(await total(api.superAdmin, query)).toBe(2);
  });
});

describe('kept pages of matches (the embedded database)', () => {
  const keepsPages = api.server.services.db.kind === 'pglite';

  async function statementsOfSearch(client: ProjectClient, query: string): Promise<{ ids: string[]; statements: number }> {
    const db = api.server.services.db;
    const before = db.statementCount;
    const res = await client.get(query);
    expect(res.status, res.text).toBe(200);
    return { ids: (res.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id).sort(), statements: db.statementCount - before };
  }

  it.runIf(keepsPages)('a repeated search runs no statement', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    await create(p, observation(code));
    const query = `/Observation?code=http://loinc.org|${code}`;
    const first = await statementsOfSearch(p, query);
    const again = await statementsOfSearch(p, query);
    expect(again.ids).toEqual(first.ids);
    expect(again.statements).toBe(0);
  });

  it('a created, an updated and a deleted resource change the next page', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    const first = await create(p, observation(code));
    const query = `/Observation?code=http://loinc.org|${code}`;
    expect((await statementsOfSearch(p, query)).ids).toEqual([first]);
    const second = await create(p, observation(code));
    expect((await statementsOfSearch(p, query)).ids).toEqual([first, second].sort());
    const update = await p.put(`/Observation/${first}`, { ...observation(uniqueCode()), id: first });
    expect(update.status, update.text).toBe(200);
    expect((await statementsOfSearch(p, query)).ids).toEqual([second]);
    expect((await p.delete(`/Observation/${second}`)).status).toBe(200);
    expect((await statementsOfSearch(p, query)).ids).toEqual([]);
  });

  it('a changed resource of another type changes a chained search', async () => {
    const p = api.newProject();
    const family = `Fam${Math.random().toString(36).slice(2, 8)}`;
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Before' }] });
    const code = uniqueCode();
    const obs = await create(p, observation(code, `Patient/${patient}`));
    const query = `/Observation?code=http://loinc.org|${code}&subject:Patient.name=${family}`;
    expect((await statementsOfSearch(p, query)).ids).toEqual([]);
    expect((await p.put(`/Patient/${patient}`, { resourceType: 'Patient', id: patient, name: [{ family }] })).status).toBe(200);
    expect((await statementsOfSearch(p, query)).ids).toEqual([obs]);
  });

  it('a version read from a kept page is the current one (the JSON of the page is not stale)', async () => {
    const p = api.newProject();
    const code = uniqueCode();
    const id = await create(p, { ...observation(code), valueString: 'one' });
    const query = `/Observation?code=http://loinc.org|${code}`;
    expect((await p.get(query)).body.entry[0].resource.valueString).toBe('one');
    expect((await p.put(`/Observation/${id}`, { ...observation(code), id, valueString: 'two' })).status).toBe(200);
    expect((await p.get(query)).body.entry[0].resource.valueString).toBe('two');
  });
});
