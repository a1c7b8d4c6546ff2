import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { EVERY_SUBJECT_ROW, openPlanDatabase, searchPlans, writeObservations, writeSubjects, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'common-chain-plans';
const OTHER_PROJECT = 'common-chain-plans-other';
const OBSERVATIONS = 20000;
const PATIENTS = 2000;

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };

/**
 * Chained searches whose targets are common (`smith1` names 1,111 of 2,000 patients, whose
 * references are more than a page reads at once) on PostgreSQL tables never analyzed: the page is
 * read from the references to the named patients, not by testing the chain on every reference.
 */
describe.skipIf(!serverUrl)('plans of chained searches to common targets, on data never analyzed', () => {
  let db: PlanDatabase;
  let named: string[];

  beforeAll(async () => {
    db = await openPlanDatabase('flint_common_chain_plans');
    // The pages read the chain's rows and the date rows: no token rows.
    await writeObservations(db.custom, PROJECT, OBSERVATIONS, '', { rows: ['date'] });
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, 'x-', { rows: ['date'] });
    await writeSubjects(db.custom, PROJECT, OBSERVATIONS, PATIENTS, '');
    await writeSubjects(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, PATIENTS, 'x-');
    named = subjectsOf('', OBSERVATIONS, 1);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('an unsorted page of one project reads the references to the named patients', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith1&_project=${PROJECT}&_count=100`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.ids).toHaveLength(100);
    expect(answer.ids.filter((id) => !named.includes(id))).toEqual([]);
  });

  it("an unsorted page of a super admin's search of every project reads the references to the named patients", async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'subject:Patient.name=smith1&_count=100');
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    const every = [...named, ...subjectsOf('x-', OBSERVATIONS / 10, 1)];
    expect(answer.ids).toHaveLength(100);
    expect(answer.ids.filter((id) => !every.includes(id))).toEqual([]);
  });

  it('a sorted page of one project sorts the references to the named patients', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith1&_project=${PROJECT}&_sort=-date&_count=5`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    // An Observation's date grows with its number.
    const byDate = named.map((id) => Number(id.slice(1))).sort((a, b) => b - a);
    expect(answer.ids).toEqual(byDate.slice(0, 5).map((n) => `o${n}`));
  });

  it('pages past the first window of references hold each match once', async () => {
    const seen: string[] = [];
    // Up to the greatest offset allowed (10,000), past the first window's 6,400 references.
    for (let offset = 0; offset < 10000; offset += 1000) {
      const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith1&_project=${PROJECT}&_count=1000&_offset=${offset}`);
      seen.push(...answer.ids);
    }
    expect(new Set(seen).size).toBe(10000);
    expect(seen.filter((id) => !named.includes(id))).toEqual([]);
  });

  it('counts every match exactly', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith1&_project=${PROJECT}&_total=accurate&_count=10`);
    expect(answer.total).toBe(named.length);
  });
});

/** The Observations whose subject is a patient named `smith<n>...` (prefix search: smith1, smith10-19, ...). */
function subjectsOf(prefix: string, count: number, n: number): string[] {
  const startsWithN = (p: number) => String(p).startsWith(String(n));
  const ids: string[] = [];
  for (let g = 1; g <= count; g++) if (startsWithN((g % PATIENTS) + 1)) ids.push(`${prefix}o${g}`);
  return ids;
}
