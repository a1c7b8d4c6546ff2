import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { openPlanDatabase, searchPlans, writeObservations, writeSubjects, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'has-plans';
const OTHER_PROJECT = 'has-plans-other';
const GENDER_PROJECT = 'has-plans-gender';
/** Male Patients of GENDER_PROJECT that nothing references, whose ids come first in the token's order. */
const UNREFERENCED_MEN = 10000;
const OBSERVATIONS = 20000;
const PATIENTS = 2000;
const CODE = 'http://loinc.org|8867-4';

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };
const genderMember: Identity = { projectId: GENDER_PROJECT, superAdmin: false };

/** A plan that reads every reference of the code in the project (or the whole table) to test `_has`. */
const EVERY_SUBJECT_ROW = /Seq Scan on reference_index|on reference_index \w+\s+Index Cond: \(\("projectId" = [^\n]*\(code = 'subject'::text\)\)\n/;

/**
 * Plans of reverse chains (`_has`) on PostgreSQL tables never analyzed: a page must not test the
 * `_has` against every reference of the project; the references to each resource are probed, or
 * the referencing resources' few rows drive the page.
 */
describe.skipIf(!serverUrl)('plans of _has searches, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_has_plans');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, 'x-');
    await writeSubjects(db.custom, PROJECT, OBSERVATIONS, PATIENTS, '');
    await writeSubjects(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, PATIENTS, 'x-');
    await writeObservations(db.custom, GENDER_PROJECT, OBSERVATIONS, 'g-');
    await writeSubjects(db.custom, GENDER_PROJECT, OBSERVATIONS, PATIENTS, 'g-');
    await writeMen(db, GENDER_PROJECT, 'g-');
    // A bound for any runaway plan: the test fails instead of running for minutes.
    await db.custom.query('SET statement_timeout = 20000');
    await db.generic.query('SET statement_timeout = 20000');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('a page of one project reads the references to each patient, not every reference of the code', async () => {
    const answer = await db.explain(member, 'Patient', `_has:Observation:subject:code=${CODE}&_project=${PROJECT}&_count=1000`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.ids.sort()).toEqual(withCode('', OBSERVATIONS, () => true).sort());
  });

  it("a super admin's search of every project by _has and a name probes the named patients", async () => {
    const answer = await db.explain(superAdmin, 'Patient', `_has:Observation:subject:code=${CODE}&name=smith2`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    const named = (p: number) => String(p).startsWith('2');
    const everyProject = [...withCode('', OBSERVATIONS, named), ...withCode('x-', OBSERVATIONS / 10, named), ...withCode('g-', OBSERVATIONS, named)];
    expect(answer.ids.sort()).toEqual(everyProject.sort());
  });

  it("a _has by one day reads the day's Observations from the range index", async () => {
    const answer = await db.explain(member, 'Patient', `_has:Observation:subject:date=2023-03-01&_project=${PROJECT}&_count=100`);
    expect(searchPlans(answer.statements)).toMatch(/Index (Only )?Scan (using|on) date_index_range_idx/);
    // writeObservations dates o<g> g hours after 2023-01-01: March 1st holds g = 1416 to 1439.
    const day = Array.from({ length: 24 }, (_, h) => `pat${((59 * 24 + h) % PATIENTS) + 1}`);
    expect(answer.ids.sort()).toEqual(day.sort());
  });

  it('a sorted page whose first windows hold no match is read from the _has candidates, not from a window of 6,400 probes', async () => {
    // 19,000 Observations of the other code reference every patient; Smith1999 sorts far down by -family.
    const answer = await db.explain(member, 'Patient', `_has:Observation:subject:code=http://loinc.org|2339-0&family:exact=Smith1999&_sort=-family&_count=20&_project=${PROJECT}`);
    expect(answer.statements.filter(({ args }) => args.includes(6400))).toEqual([]);
    expect(answer.ids).toEqual(['pat1999']);
  });

  it('an unsorted page by a common token whose first windows hold no match is read from the _has candidates, not from a window of 6,400 probes', async () => {
    // 19,000 Observations of 2339-0 reference every g-pat; the 10,000 g-apat men before them in the token's order have none.
    const answer = await db.explain(genderMember, 'Patient', `_has:Observation:subject:code=http://loinc.org|2339-0&gender=male&_count=20&_project=${GENDER_PROJECT}`);
    expect(answer.statements.filter(({ args }) => args.includes(6400))).toEqual([]);
    expect(answer.ids).toHaveLength(20);
    expect(answer.ids.filter((id) => !/^g-pat\d+$/.test(id))).toEqual([]);
  });

  it('an exact count of one project counts the patients the code references', async () => {
    const answer = await db.explain(member, 'Patient', `_has:Observation:subject:code=${CODE}&_project=${PROJECT}&_total=accurate&_count=10`);
    expect(searchPlans(answer.statements)).not.toMatch(EVERY_SUBJECT_ROW);
    expect(answer.total).toBe(withCode('', OBSERVATIONS, () => true).length);
  });

  it("an exact count reads the referencing Observations' references in one read of their primary key, not one lookup per Observation", async () => {
    const answer = await db.explain(member, 'Patient', `_has:Observation:subject:code=${CODE}&_project=${PROJECT}&_total=accurate&_count=10`);
    expect(mappingPlans(answer.statements)).toMatch(ONE_READ_OF_REFERENCES);
    expect(mappingPlans(answer.statements)).not.toMatch(LOOKUP_PER_SOURCE);
    expect(answer.total).toBe(withCode('', OBSERVATIONS, () => true).length);
  });

  it('a sorted page of many referencing Observations maps them to their patients in one read of their references', async () => {
    // 19,000 Observations of 2339-0: more than a first page reads them for, so they are counted and mapped in one statement.
    const answer = await db.explain(member, 'Patient', `_has:Observation:subject:code=http://loinc.org|2339-0&family:exact=Smith1999&_sort=-family&_count=20&_project=${PROJECT}`);
    expect(answer.statements.filter(({ sql }) => sql.startsWith('WITH s AS MATERIALIZED'))).toHaveLength(1);
    expect(mappingPlans(answer.statements)).toMatch(ONE_READ_OF_REFERENCES);
    expect(mappingPlans(answer.statements)).not.toMatch(LOOKUP_PER_SOURCE);
    expect(answer.ids).toEqual(['pat1999']);
  });
});

/** The references of the `_has`'s referencing resources read for all of them at once, through the primary key (a bitmap, or an index scan). */
const ONE_READ_OF_REFERENCES = /reference_index_pkey[^\n]*\n\s+Index Cond: \(\("resourceType" = 'Observation'::text\) AND \("resourceId" = ANY \(\$\d+\)\)\)/;
/** The references of each referencing resource looked up on their own. */
const LOOKUP_PER_SOURCE = /"resourceId" = g\.id/;

/** The plans of the statements that map a `_has`'s referencing resources to the resources they reference. */
function mappingPlans(statements: readonly { sql: string; plan: string }[]): string {
  return statements
    .filter(({ sql }) => sql.includes('FROM reference_index h '))
    .map(({ plan }) => plan)
    .join('\n');
}

/**
 * UNREFERENCED_MEN Patients `<prefix>apat<n>` of `projectId`, and a male gender for them and for the
 * PATIENTS `<prefix>pat<n>` of writeSubjects.
 */
async function writeMen(db: PlanDatabase, projectId: string, prefix: string): Promise<void> {
  await db.custom.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Patient', $2 || 'apat' || g, $1, gen_random_uuid(), timestamptz '2024-01-01' + g * interval '1 second', false,
            json_build_object('resourceType', 'Patient', 'id', $2 || 'apat' || g, 'gender', 'male')
     FROM generate_series(1, $3::int) g`,
    [projectId, prefix, UNREFERENCED_MEN],
  );
  await db.custom.query(
    `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
     SELECT $1, 'Patient', id, 1, 'gender', 'http://hl7.org/fhir/administrative-gender', 'male', NULL
     FROM (SELECT $2 || 'apat' || g AS id FROM generate_series(1, $3::int) g UNION ALL SELECT $2 || 'pat' || g FROM generate_series(1, $4::int) g) p`,
    [projectId, prefix, UNREFERENCED_MEN, PATIENTS],
  );
}

/**
 * The patients (`<prefix>pat<p>`, family `smith<p>`) that some Observation of code 8867-4 (every
 * twentieth, writeObservations) references as its subject (`pat<g % PATIENTS + 1>`, writeSubjects), of those `named`.
 */
function withCode(prefix: string, observations: number, named: (p: number) => boolean): string[] {
  const ids = new Set<string>();
  for (let g = 20; g <= observations; g += 20) if (named((g % PATIENTS) + 1)) ids.add(`${prefix}pat${(g % PATIENTS) + 1}`);
  return [...ids];
}
