import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { EVERY_SUBJECT_ROW, openPlanDatabase, searchPlans, writeObservations, writeSubjects, type ExplainedStatement, type PlanDatabase } from '../helpers/plan-database.js';

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

/** The statements that probe the chain on date rows read in the page's order. */
const datePageStatements = (statements: readonly ExplainedStatement[]) =>
  statements.filter(({ sql }) => sql.includes('FROM date_index w') && sql.includes('reference_index c1'));

/**
 * The part of a plan from its first Limit down to its scan of the date rows: a Sort or an
 * Aggregate there reads (and probes the chain on) every row of the window before the first row of
 * the page is known, where a walk stops at the page.
 */
const belowFirstLimit = (plan: string): string => plan.slice(plan.indexOf('Limit'), plan.indexOf('date_index_sort_high_idx'));

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
    // The pages read the chain's rows and the date rows: no token rows.
    await writeObservations(db.custom, PROJECT, OBSERVATIONS, '', { rows: ['date'] });
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, 'x-', { rows: ['date'] });
    await writeSubjects(db.custom, PROJECT, OBSERVATIONS, PATIENTS, '');
    await writeSubjects(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, PATIENTS, 'x-');
    // Resources with more than one date row are walked once, at their newest: o100 has a row
    // newer than every other, o59999 an older one, o59998 one of the same instant.
    await db.custom.query(
      `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
       SELECT $1, 'Observation', v.id, 2, 'date', v.d, v.d FROM (VALUES ('o100', timestamptz '2040-01-01'), ('o59999', timestamptz '2023-01-01'),
         ('o59998', timestamptz '2023-01-01' + 59998 * interval '1 hour' + interval '999 milliseconds')) v(id, d)`,
      [PROJECT],
    );
  }, 120_000);

  afterAll(async () => {
    await db?.close();
  });

  it('a sorted page of one project probes the chain on the newest Observations', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith&_project=${PROJECT}&_sort=-date&_count=5`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    // An Observation's date grows with its number (o100 has a newer one too).
    expect(answer.ids).toEqual(['o100', 'o60000', 'o59999', 'o59998', 'o59997']);
  });

  it('a sorted page of one project does not read more references than its first', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith&_project=${PROJECT}&_sort=-date&_count=5`);
    expect(answer.statements.filter(({ args }) => readsSortedCandidates(args))).toEqual([]);
  });

  it("a sorted page of a super admin's search of every project probes the chain on the newest Observations", async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'subject:Patient.name=smith&_sort=-date&_count=5');
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.ids).toEqual(['o100', 'o60000', 'o59999', 'o59998', 'o59997']);
  });

  it('a sorted page of one project walks the date rows and stops at its page, neither sorting nor grouping them before the chain is probed', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith&_project=${PROJECT}&_sort=-date&_count=5`);
    const walks = datePageStatements(answer.statements);
    expect(walks).toHaveLength(1);
    expect(belowFirstLimit(walks[0].plan)).not.toMatch(/Sort|Aggregate/);
  });

  it('a sorted page past an offset walks on to it', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith&_project=${PROJECT}&_sort=-date&_offset=3&_count=3`);
    expect(answer.ids).toEqual(['o59998', 'o59997', 'o59996']);
  });
});
