import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from './helpers.js';

/**
 * Exact counts are kept between requests until a write could change them (src/search/count-cache.ts).
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
    expect(await statementsFor(p, query)).toBe(first - 1);
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
