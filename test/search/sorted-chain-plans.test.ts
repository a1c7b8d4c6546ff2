import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { EVERY_SUBJECT_ROW, openPlanDatabase, searchPlans, writeObservations, writeSubjects, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'sorted-chain-plans';
const OTHER_PROJECT = 'sorted-chain-plans-other';
// More references to the named patients than a sorted page sorts (51,200).
const OBSERVATIONS = 60000;
const PATIENTS = 2000;

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };

/** Whether a statement read the most candidates a sorted page sorts, and one more (51,201). */
const readsSortedCandidates = (args: readonly unknown[]): boolean => args.includes(51201);

/**
 * Sorted pages of chained searches whose targets every patient is (`smith` names all 2,000, whose
 * 60,000 references are more than a sorted page sorts) on PostgreSQL tables never analyzed: the
 * page walks the date rows in its order and probes the chain on each Observation, not by testing
 * it against every reference of the project, and without reading the references first.
 */
describe.skipIf(!serverUrl)('plans of sorted chained searches to very common targets, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_sorted_chain_plans');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, 'x-');
    await writeSubjects(db.custom, PROJECT, OBSERVATIONS, PATIENTS, '');
    await writeSubjects(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, PATIENTS, 'x-');
  }, 120_000);

  afterAll(async () => {
    await db?.close();
  });

  it('a sorted page of one project probes the chain on the newest Observations', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith&_project=${PROJECT}&_sort=-date&_count=5`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    // An Observation's date grows with its number.
    expect(answer.ids).toEqual(['o60000', 'o59999', 'o59998', 'o59997', 'o59996']);
  });

  it('a sorted page of one project does not read more references than its first', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith&_project=${PROJECT}&_sort=-date&_count=5`);
    expect(answer.statements.filter(({ args }) => readsSortedCandidates(args))).toEqual([]);
  });

  it("a sorted page of a super admin's search of every project probes the chain on the newest Observations", async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'subject:Patient.name=smith&_sort=-date&_count=5');
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.ids).toEqual(['o60000', 'o59999', 'o59998', 'o59997', 'o59996']);
  });
});
