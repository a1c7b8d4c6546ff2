import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { EVERY_SUBJECT_ROW, openPlanDatabase, searchPlans, writeObservations, writeSubjects, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'chain-plans';
const OTHER_PROJECT = 'chain-plans-other';
const OBSERVATIONS = 20000;
const PATIENTS = 2000;

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };

/**
 * Plans of chained searches on PostgreSQL tables never analyzed: a chain to few targets must read
 * the references to those targets, not test the chain on every reference of the project.
 */
describe.skipIf(!serverUrl)('plans of chained searches, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_chain_plans');
    // The pages read the chain's rows and the date rows: no token rows.
    await writeObservations(db.custom, PROJECT, OBSERVATIONS, '', { rows: ['date'] });
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, 'x-', { rows: ['date'] });
    await writeSubjects(db.custom, PROJECT, OBSERVATIONS, PATIENTS, '');
    await writeSubjects(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, PATIENTS, 'x-');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it("a super admin's search of every project by a chained name reads the references to the named patients", async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'subject:Patient.name=smith42&_count=1000');
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.ids.sort()).toEqual([...subjectsOf('', OBSERVATIONS, 42), ...subjectsOf('x-', OBSERVATIONS / 10, 42)].sort());
  });

  it("a super admin's search of every project by a chained name sorted by date reads the references to the named patients", async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'subject:Patient.name=smith42&_sort=-date&_count=5');
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    // An Observation's date grows with its number; ties across the projects by id.
    const byDate = [...subjectsOf('', OBSERVATIONS, 42), ...subjectsOf('x-', OBSERVATIONS / 10, 42)]
      .map((id) => ({ id, n: Number(id.replace(/^x-o|^o/, '')) }))
      .sort((a, b) => b.n - a.n || (a.id < b.id ? -1 : 1));
    expect(answer.ids).toEqual(byDate.slice(0, 5).map(({ id }) => id));
  });

  it('a search of one project by a chained name reads the references to the named patients', async () => {
    const answer = await db.explain(member, 'Observation', `subject:Patient.name=smith42&_project=${PROJECT}&_count=1000`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.ids.sort()).toEqual(subjectsOf('', OBSERVATIONS, 42).sort());
  });

  it("a _revinclude reads the references to the page's resources by their ids, not every reference of the code", async () => {
    const answer = await db.explain(member, 'Patient', `_id=pat42&_project=${PROJECT}&_revinclude=Observation:subject`);
    expect(answer.ids).toEqual(['pat42']);
    expect(searchPlans(answer.statements)).not.toMatch(TARGETS_FILTERED);
    expect(answer.included.sort()).toEqual(referencesTo('', OBSERVATIONS, 42).sort());
  });

  it("a super admin's _revinclude reads the references to the page's resources in every project", async () => {
    const answer = await db.explain(superAdmin, 'Patient', '_id=pat42,x-pat42&_revinclude=Observation:subject');
    expect(answer.ids.sort()).toEqual(['pat42', 'x-pat42']);
    expect(searchPlans(answer.statements)).not.toMatch(TARGETS_FILTERED);
    expect(answer.included.sort()).toEqual([...referencesTo('', OBSERVATIONS, 42), ...referencesTo('x-', OBSERVATIONS / 10, 42)].sort());
  });

  it("an _include reads each match's references by its id", async () => {
    const answer = await db.explain(member, 'Observation', `_id=o41,o2041,o42&_project=${PROJECT}&_include=Observation:subject`);
    expect(answer.ids.sort()).toEqual(['o2041', 'o41', 'o42']);
    expect(searchPlans(answer.statements)).not.toMatch(SOURCES_FILTERED);
    expect(answer.included.sort()).toEqual(['Patient/pat42', 'Patient/pat43']);
  });
});

/** A scan of reference_index that tests the targets (or sources) by filter: it reads every reference row of the code (in the project). */
const TARGETS_FILTERED = /on reference_index \w+\n(\s+(Index|Recheck) Cond: [^\n]*\n)?\s+Filter: [^\n]*"targetId"/;
const SOURCES_FILTERED = /on reference_index \w+\n(\s+(Index|Recheck) Cond: [^\n]*\n)?\s+Filter: [^\n]*"resourceId"/;

/** `Observation/<id>` of each Observation whose subject is exactly `<prefix>pat<n>`. */
function referencesTo(prefix: string, count: number, n: number): string[] {
  const ids: string[] = [];
  for (let g = 1; g <= count; g++) if ((g % PATIENTS) + 1 === n) ids.push(`Observation/${prefix}o${g}`);
  return ids;
}

/** The Observations whose subject is a patient named `smith<n>...` (prefix search: smith42, smith420-429). */
function subjectsOf(prefix: string, count: number, n: number): string[] {
  const named = (p: number) => String(p).startsWith(String(n));
  const ids: string[] = [];
  for (let g = 1; g <= count; g++) if (named((g % PATIENTS) + 1)) ids.push(`${prefix}o${g}`);
  return ids;
}
