import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMatches, type RecordSource } from '../../src/clinical/record-pages.js';
import type { Identity } from '../../src/identity/identity.js';
import type { SearchRow } from '../../src/search/result.js';
import { newestWithCode, openPlanDatabase, searchPlans, writeObservations, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'scale-plans';
const OTHER_PROJECT = 'scale-plans-other';
const OBSERVATIONS = 20000;

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };
/** A member whose AccessPolicy narrows Observation by a broad value, as policies do. */
const finalOnly: Identity = {
  projectId: PROJECT,
  superAdmin: false,
  accessPolicy: { policyId: 'final-only', resources: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' }] },
};
/** The value index of token rows, whose resourceId comes after value and system. */
const TOKEN_VALUE_INDEX = 'token_index_projectId_resourceType_code_value_system_idx';
/** The patient whose compartment holds the first COMPARTMENT Observations. */
const PATIENT = 'p1';
const COMPARTMENT = 50;
const PATIENTS = 20000;
/** More projects than the every-project sorted page once read one at a time (32), and the code only their Observations have. */
const MANY_PROJECTS = 40;
const MANY_CODE = 'http://loinc.org|29463-7';
/** A code only PROJECT's first RARE_ROWS Observations have, besides their own. */
const RARE_CODE = 'http://loinc.org|rare-1';
const RARE_ROWS = 30;

/**
 * Plans of searches whose matches are many, on PostgreSQL tables never analyzed: each must read
 * the index rows of its page's order (or probe its filters per row) rather than every match.
 */
describe.skipIf(!serverUrl)('plans of searches with many matches, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_scale_plans');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 2, 'x-');
    await writePatients(db.custom, PROJECT, PATIENTS);
    await writeManyProjects(db.custom);
    await db.custom.query(
      `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
       SELECT $1, 'Observation', 'o' || g, 3, 'code', $2, $3, NULL FROM generate_series(1, $4::int) g`,
      [PROJECT, ...RARE_CODE.split('|'), RARE_ROWS],
    );
    await db.custom.query(
      `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
       SELECT $1, 'Observation', 'o' || g, 1, '_compartment', 'Patient', $2, NULL FROM generate_series(1, $3::int) g`,
      [PROJECT, PATIENT, COMPARTMENT],
    );
    await db.custom.query(
      `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
       SELECT $1, 'Observation', 'o' || g, 2, 'subject', 'Patient', $2, NULL FROM generate_series(1, $3::int) g`,
      [PROJECT, PATIENT, COMPARTMENT],
    );
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it("a search of every project sorted by date reads each project's date rows in order instead of sorting its matches", async () => {
    const plan = searchPlans(await db.plansOf(superAdmin, 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_count=10'));
    expect(plan).toMatch(/Index Scan using date_index_sort_high_idx on date_index w\s+Index Cond: \(\("projectId" = p(_\d+)?\.id\)/);
    expect(plan).not.toMatch(/lastUpdated_id_idx" on resource r\b/);
  });

  it('a search of every project sorted by date merges the projects\' pages in date order, ties by id', async () => {
    // Both projects have an Observation of 8867-4 every 20 hours from 2023-01-01, at the same hours.
    const answer = await db.explain(superAdmin, 'Observation', 'code=http://loinc.org|8867-4&_sort=date&_count=4&_offset=2');
    expect(answer.ids).toEqual(['o40', 'x-o40', 'o60', 'x-o60']);
  });

  it("a search of more projects than a few statements each could read reads every project's date rows in order, a statement for all of them", async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_count=5');
    // One statement per window size, not per project (and before them, one per round of the merged heads).
    const dated = answer.statements.filter(({ sql }) => sql.includes('date_index w'));
    expect(dated.filter(({ sql }) => !sql.startsWith('WITH heads')).length).toBeLessThanOrEqual(3);
    expect(dated.filter(({ sql }) => sql.startsWith('WITH heads')).length).toBeLessThanOrEqual(3);
    expect(searchPlans(answer.statements)).toMatch(/Index Scan using date_index_sort_high_idx on date_index w\s+Index Cond: \(\("projectId" = p(_\d+)?\.id\)/);
    expect(answer.ids).toEqual(['o20000', 'o19980', 'o19960', 'o19940', 'o19920']);
  });

  it("a search of many projects sorted by date, whose code has few rows in each, reads the code's rows instead of each project's date rows", async () => {
    const answer = await db.explain(superAdmin, 'Observation', `code=${MANY_CODE}&_sort=-date&_count=5`);
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(new RegExp(`Index (Only )?Scan using "?${TOKEN_VALUE_INDEX}"? on token_index w(_\\d+)?\\s+Index Cond: \\(\\("projectId" = p(_\\d+)?\\.id\\)`));
    // Date rows are read only by the merged heads (a few of each project) that showed the code rare.
    expect(answer.statements.filter(({ sql }) => sql.includes('date_index w')).every(({ sql }) => sql.startsWith('WITH heads'))).toBe(true);
    expect(answer.ids).toEqual(['m39-o300', 'm38-o300', 'm37-o300', 'm36-o300', 'm35-o300']);
  });

  it('a search of many projects by date merges every project\'s first rows, those of projects with fewer matches than the page included', async () => {
    const answer = await db.explain(superAdmin, 'Observation', `code=${MANY_CODE}&_sort=-date&_count=4&_offset=38`);
    expect(answer.ids).toEqual(['m1-o300', 'm0-o300', 'm39-o290', 'm38-o290']);
  });

  it('a search of many projects sorted by date with a filter most rows meet probes it on the merged first rows of every project, in order, until the page is full', async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'status=final&_sort=-date&_count=5&_offset=5');
    // The filter is tested above the merged rows' sort and limit: per row, in the page's order, until the page's rows are found.
    expect(searchPlans(answer.statements)).toMatch(/Filter: \(\(SubPlan \d+\) IS TRUE\)\s+->  Limit\s+->  Sort\s+Sort Key: h\.first DESC, h\.id/);
    // Neither a window of each project's date rows with the filter tested on each, nor a count of each project's status rows.
    expect(answer.statements.some(({ sql }) => sql.includes('WITH firsts') || sql.includes('WITH counted'))).toBe(false);
    expect(answer.ids).toEqual(['o19995', 'o19994', 'o19993', 'o19992', 'o19991']);
  });

  it("a search in one project by a common token code and a rare one reads the rare code's rows, whichever comes first", async () => {
    const answer = await db.explain(member, 'Observation', `status=final&code=${RARE_CODE}&_count=5`);
    // The codes' rows are counted (up to a bound) to choose; the page reads only the rare code's.
    const reads = searchPlans(answer.statements.filter(({ sql }) => !sql.startsWith('SELECT count(*)')));
    expect(reads).toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = 'rare-1'::text/);
    expect(reads).not.toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = 'final'::text/);
    expect(answer.ids).toEqual(['o1', 'o10', 'o11', 'o12', 'o13']);
  });

  it("a search by two common token codes at a deep offset reads a window of 6,400 of the first code's rows before any general statement", async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=200&_count=5');
    // A deep page (its last window past 6,400 rows) counts both codes further: the code's 1,000 rows drive, probing status.
    expect(answer.statements.some(({ sql }) => /^SELECT [^(]*? FROM resource r WHERE /.test(sql))).toBe(false);
    const matches = Array.from({ length: OBSERVATIONS / 20 }, (_, i) => `o${20 * (i + 1)}`).sort();
    expect(answer.ids).toEqual(matches.slice(200, 205));
  });

  it('a search by two common token codes at an offset past what 6,400 of the first code\'s rows hold reads larger windows before any general statement', async () => {
    // A twentieth of status's rows have the code: 6,400 of them hold 320 matches, fewer than the offset.
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=900&_count=5');
    expect(answer.statements.some(({ sql }) => /^SELECT [^(]*? FROM resource r WHERE /.test(sql))).toBe(false);
    const matches = Array.from({ length: OBSERVATIONS / 20 }, (_, i) => `o${20 * (i + 1)}`).sort();
    expect(answer.ids).toEqual(matches.slice(900, 905));
  });

  it("a search by two common token codes at a deep offset reads the rarer code's rows, probing the commoner, whichever comes first", async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|8867-4&_offset=900&_count=5');
    const reads = searchPlans(answer.statements.filter(({ sql }) => !sql.startsWith('SELECT count(*)')));
    expect(reads).toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = '8867-4'::text/);
    expect(reads).not.toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = 'final'::text/);
  });

  it('a search sorted by date with a common token code at a deep offset answers before any general statement', async () => {
    const answer = await db.explain(member, 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_offset=900&_count=5');
    expect(answer.statements.some(({ sql }) => /^SELECT [^(]*? FROM resource r WHERE /.test(sql))).toBe(false);
    expect(answer.ids).toEqual(['o2000', 'o1980', 'o1960', 'o1940', 'o1920']);
  });

  it("a search sorted by date by two common token codes at a deep offset sorts the rarer code's rows instead of reading windows of the date rows", async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|8867-4&_sort=-date&_offset=300&_count=5');
    const reads = searchPlans(answer.statements.filter(({ sql }) => !sql.startsWith('SELECT count(*)')));
    expect(reads).toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = '8867-4'::text/);
    expect(reads).not.toMatch(/on date_index w(_\d+)?\s/);
    expect(answer.ids).toEqual(['o14000', 'o13980', 'o13960', 'o13940', 'o13920']);
  });

  it("a search sorted by date by a common token code and _lastUpdated at a deep offset skips the offset among the resources that meet _lastUpdated", async () => {
    // Observation oN was last updated N seconds after 2025-01-01: o20 .. o14400 have the code and meet the bound.
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|8867-4&_lastUpdated=le2025-01-01T04:00:00Z&_sort=-date&_offset=300&_count=5');
    const reads = searchPlans(answer.statements.filter(({ sql }) => !sql.startsWith('SELECT count(*)')));
    expect(reads).toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = '8867-4'::text/);
    expect(answer.ids).toEqual(['o8400', 'o8380', 'o8360', 'o8340', 'o8320']);
  });

  it("an exact count by a common token code and a rare one is driven by the rare code's rows, whichever comes first", async () => {
    const answer = await db.explain(member, 'Observation', `status=final&code=${RARE_CODE}&_total=accurate&_count=1`);
    // The codes' rows are counted (up to a bound) to choose; the count reads only the rare code's rows and probes status.
    const count = searchPlans(answer.statements.filter(({ sql }) => /^SELECT count\((DISTINCT r\.id|\*)\)::int AS n FROM \(SELECT x0\./.test(sql)));
    expect(count).toMatch(/on token_index x0\s+Index Cond: \([^\n]*value = 'rare-1'::text/);
    expect(count).not.toMatch(/on token_index x0\s+Index Cond: \([^\n]*value = 'final'::text/);
    expect(answer.total).toBe(RARE_ROWS);
  });

  it('a search of every project sorted by date at an offset deeper than the largest window answers its page', async () => {
    // offset + count + 1 = 1,606 matches: a first window of 6,424 rows, larger than the largest one.
    const answer = await db.explain(superAdmin, 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_count=5&_offset=1600');
    expect(answer.ids).toEqual((await newestWithCode(db.custom, '8867-4')).slice(1600, 1605));
  });

  it("a search of many projects sorted by date by a common token code and a rare one reads each project's rows of the rare code", async () => {
    const answer = await db.explain(superAdmin, 'Observation', `status=final&code=${MANY_CODE}&_sort=-date&_count=5`);
    const counted = searchPlans(answer.statements.filter(({ sql }) => sql.startsWith('WITH counted')));
    expect(counted).toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = '29463-7'::text/);
    expect(counted).not.toMatch(/on token_index w(_\d+)?\s+Index Cond: \([^\n]*value = 'final'::text/);
    expect(answer.ids).toEqual(['m39-o300', 'm38-o300', 'm37-o300', 'm36-o300', 'm35-o300']);
  });

  it("a search by subject sorted by date reads the subject's rows and sorts them, not the project's Observations or date rows in order", async () => {
    const answer = await db.explain(member, 'Observation', `subject=Patient/${PATIENT}&_sort=-date&_count=5`);
    const plan = searchPlans(answer.statements);
    // Its resources by primary key: never the project's Observations in lastUpdated order, nor its date rows in date order.
    expect(plan).toMatch(/Index Scan using resource_pkey on resource r\b/);
    expect(plan).not.toMatch(/lastUpdated_id_idx" on resource r\b/);
    expect(plan).not.toMatch(/date_index_sort_\w+_idx/);
    expect(answer.ids).toEqual(['o50', 'o49', 'o48', 'o47', 'o46']);
  });

  it("a search by a list of subjects sorted by date reads each subject's reference rows by its own seek, not every subject row of the project", async () => {
    const answer = await db.explain(member, 'Observation', `subject=Patient/${PATIENT},Patient/p2&_sort=-date&_count=5`);
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(/on reference_index x0\s+Index Cond: \([^\n]*"targetId" = /);
    expect(plan).not.toMatch(/Filter: [^\n]*"targetId" = [^\n]* OR /);
    expect(answer.ids).toEqual(['o50', 'o49', 'o48', 'o47', 'o46']);
  });

  it("a search by a list of rare names reads each name's string rows, then the Patients by primary key", async () => {
    const answer = await db.explain(member, 'Patient', 'name=smith1234,smith777&_count=30');
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(/Index Scan using resource_pkey on resource r\b/);
    expect(plan).not.toMatch(/lastUpdated_id_idx" on resource r\b|Seq Scan on resource r\b/);
    const named = (n: number) => [`pat${n}`, ...Array.from({ length: 10 }, (_, i) => `pat${n}${i}`)];
    expect(answer.ids.sort()).toEqual([...named(1234), ...named(777)].sort());
  });

  it("a search by :not of a common code walks the project's Observations in order, not every row of the code", async () => {
    const answer = await db.explain(member, 'Observation', 'code:not=http://loinc.org|8867-4&_count=10');
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(/lastUpdated_id_idx" on resource r(_\d+)?\b/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
    expect(answer.ids).toHaveLength(10);
    expect(answer.ids.filter((id) => Number(id.slice(1)) % 20 === 0)).toEqual([]);
  });

  it('a date range page probes its other filters per resource of the range', async () => {
    const answer = await db.explain(member, 'Observation', 'date=ge2023-03-01&date=le2023-03-31&status=final&_count=5');
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
    expect(answer.ids).toHaveLength(5);
  });

  it("a one-day date search reads the day's rows from the range index, probing the day on each", async () => {
    const answer = await db.explain(member, 'Observation', 'date=2023-03-01&_count=30');
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(/Index Scan (using|on) date_index_range_idx/);
    // writeObservations dates o<g> g hours after 2023-01-01: March 1st (59 days on) holds 24 of them.
    expect(answer.ids.sort()).toEqual(Array.from({ length: 24 }, (_, h) => `o${59 * 24 + h}`).sort());
  });

  it('a string prefix page probes its other filters per resource of the window', async () => {
    const answer = await db.explain(member, 'Patient', 'name=smi&birthdate=ge1980-01-01&_count=5');
    const plan = searchPlans(answer.statements);
    expect(plan).toMatch(/Index Scan using date_index_pkey on date_index x0/);
    expect(plan).not.toMatch(/date_index_sort_\w+_idx on date_index x0/);
    expect(answer.ids).toHaveLength(5);
  });

  it("a rare string prefix, whose first window falls short, reads each of the parameter's codes by its index, the prefix's range within it", async () => {
    const answer = await db.explain(member, 'Patient', 'name=smith1234');
    const plan = searchPlans(answer.statements);
    expect(plan).not.toMatch(/Filter: \(code = ANY/);
    expect(plan).toMatch(/Index Cond: \(\("projectId" = '[^']+'::text\) AND \("resourceType" = 'Patient'::text\) AND \(code = 'name'::text\) AND \(value ~>=~ 'smith1234'::text\)/);
    expect(answer.ids).toEqual(['pat1234', ...Array.from({ length: 10 }, (_, i) => `pat1234${i}`)]);
  });

  it("a patient's record probes the AccessPolicy criteria per resource of the compartment", async () => {
    const source: Omit<RecordSource, 'db'> = {
      identity: finalOnly,
      projectId: PROJECT,
      filters: {},
      compileContext: (args) => ({ args, scope: { projectIds: [PROJECT] }, fhirBase: 'http://flint.test/fhir/R4', depth: 0 }),
    };
    let read: SearchRow[] = [];
    const statements = await db.capture(async (executor) => {
      read = await readMatches({ ...source, db: executor }, PATIENT, undefined, 20);
    });
    const plan = statements.map(({ plan }) => plan).join('\n');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
    expect(read.map(({ id }) => id)).toEqual(Array.from({ length: COMPARTMENT }, (_, i) => `o${i + 1}`).sort().slice(0, 20));
  });
});

/**
 * MANY_PROJECTS projects `many-<i>` of 300 Observations each (ids `m<i>-o<n>`), every tenth of
 * code MANY_CODE, the others 8867-4, all final; dated a minute apart, the projects' in turn: `m<i>-o<n>` at
 * minute 40n + i of 2024.
 */
async function writeManyProjects(client: pg.Client): Promise<void> {
  const rows = `FROM generate_series(0, ${MANY_PROJECTS - 1}) i, generate_series(1, 300) g`;
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Observation', 'm' || i || '-o' || g, 'many-' || i, gen_random_uuid(), timestamptz '2025-01-01' + g * interval '1 second', false,
            json_build_object('resourceType', 'Observation', 'id', 'm' || i || '-o' || g, 'status', 'final') ${rows}`,
  );
  await client.query(
    `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
     SELECT 'many-' || i, 'Observation', 'm' || i || '-o' || g, s.seq, s.code, s.system, s.value, NULL ${rows},
       LATERAL (VALUES (1, 'code', 'http://loinc.org', CASE WHEN g % 10 = 0 THEN '${MANY_CODE.split('|')[1]}' ELSE '8867-4' END), (2, 'status', NULL, 'final'))
         AS s(seq, code, system, value)`,
  );
  await client.query(
    `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
     SELECT 'many-' || i, 'Observation', 'm' || i || '-o' || g, 1, 'date', d, d + interval '999 milliseconds'
     ${rows}, LATERAL (SELECT timestamptz '2024-01-01' + (40 * g + i) * interval '1 minute' AS d) t`,
  );
}

/** `count` Patients of `projectId` named smith<n>, each with a birthdate (one a day from 1930), as the store writes their rows. */
async function writePatients(client: pg.Client, projectId: string, count: number): Promise<void> {
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Patient', 'pat' || g, $1, gen_random_uuid(), timestamptz '2025-01-01' + g * interval '1 second', false,
            json_build_object('resourceType', 'Patient', 'id', 'pat' || g)
     FROM generate_series(1, $2::int) g`,
    [projectId, count],
  );
  await client.query(
    `INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact)
     SELECT $1, 'Patient', 'pat' || g, 1, 'name', 'smith' || g, 'Smith' || g FROM generate_series(1, $2::int) g`,
    [projectId, count],
  );
  await client.query(
    `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
     SELECT $1, 'Patient', 'pat' || g, 1, 'birthdate', d, d + interval '1 day' - interval '1 millisecond'
     FROM generate_series(1, $2::int) g, LATERAL (SELECT timestamptz '1930-01-01' + g * interval '1 day' AS d) t`,
    [projectId, count],
  );
}
