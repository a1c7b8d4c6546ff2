import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { openPlanDatabase, searchPlans, writeObservations, type ExplainedStatement, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'count-plans';
const OBSERVATIONS = 20000;
const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };

/** The plan of a search's exact count (exact-count.ts), the statement that counts its matches. */
function countPlan(statements: readonly ExplainedStatement[]): string {
  return searchPlans(countStatements(statements));
}

function countStatements(statements: readonly ExplainedStatement[]): ExplainedStatement[] {
  return statements.filter(({ sql }) => /^SELECT (count|\(\()/.test(sql) && !sql.includes(' LIMIT '));
}

/**
 * Plans of exact counts whose rows are many: the count must read its driver's rows through the
 * one index that finds them, whatever the statistics say (never analyzed, analyzed).
 */
describe.skipIf(!serverUrl)('plans of exact counts, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_count_plans');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeObservations(db.custom, `${PROJECT}-other`, OBSERVATIONS / 2, 'x-');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it("a count of one day's resources in a named project reads the day's date rows, not every date row of the project", async () => {
    const answer = await db.explain(superAdmin, 'Observation', `date=2023-03-01&_total=accurate&_count=5&_project=${PROJECT}`);
    const plan = countPlan(answer.statements);
    expect(plan).toMatch(/date_index_range_idx/);
    expect(plan).not.toMatch(/BitmapAnd/);
    // Hourly dates from 2023-01-01 01:00: every hour of the day, in this project only.
    expect(answer.total).toBe(24);
  });

  it("a count of two codes most resources have reads both codes' rows once, probing neither per row of the other", async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|2339-0&_total=accurate&_count=5');
    const plan = countPlan(answer.statements);
    expect(plan).not.toMatch(/SubPlan|Nested Loop/);
    // Every Observation is final; 19 of 20 have code 2339-0.
    expect(answer.total).toBe(OBSERVATIONS - OBSERVATIONS / 20);
  });

  it('a token :missing=true probes each resource\'s own rows, never an anti-join over every row of the code', async () => {
    const answer = await db.explain(member, 'Observation', 'status:missing=true&_total=accurate&_count=5');
    expect(searchPlans(answer.statements)).not.toMatch(/Anti Join/);
    // Every Observation has a status.
    expect(answer.ids).toEqual([]);
    expect(answer.total).toBe(0);
  });

  it('an exact count of a lone :missing=true subtracts the resources with the code from the resources, probing none', async () => {
    const answer = await db.explain(member, 'Observation', 'subject:missing=true&_total=accurate&_count=5');
    expect(countPlan(answer.statements)).not.toMatch(/Anti Join|SubPlan/);
    // No Observation has a subject.
    expect(answer.total).toBe(OBSERVATIONS);
  });

  it('a date :missing=false sorted by -_lastUpdated walks the resources in that order, never hashing every row of the date', async () => {
    const answer = await db.explain(member, 'Observation', 'date:missing=false&_sort=-_lastUpdated&_count=3');
    expect(searchPlans(answer.statements)).not.toMatch(/HashAggregate|Hash Join/);
    expect(answer.ids).toEqual([`o${OBSERVATIONS}`, `o${OBSERVATIONS - 1}`, `o${OBSERVATIONS - 2}`]);
  });

  it('a common code sorted by -_lastUpdated with an exact total reads the page in that order and counts as the unsorted total does', async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&_sort=-_lastUpdated&_total=accurate&_count=3');
    const page = answer.statements.filter(({ sql }) => sql.includes(' LIMIT '));
    expect(searchPlans(page)).not.toMatch(/HashAggregate|Sort Key/);
    expect(answer.ids).toEqual([`o${OBSERVATIONS}`, `o${OBSERVATIONS - 1}`, `o${OBSERVATIONS - 2}`]);
    expect(countPlan(answer.statements)).toBe(countPlan((await db.explain(member, 'Observation', 'status=final&_total=accurate&_count=3')).statements));
    expect(answer.total).toBe(OBSERVATIONS);
  });

  it("a super admin's count in a named project reads no other project's rows", async () => {
    const answer = await db.explain(superAdmin, 'Observation', `code=http://loinc.org|2339-0&_total=accurate&_count=5&_project=${PROJECT}`);
    const counts = countStatements(answer.statements);
    expect(counts.length).toBeGreaterThan(0);
    expect(counts.flatMap(({ args }) => args)).not.toContain(`${PROJECT}-other`);
    expect(answer.total).toBe(OBSERVATIONS - OBSERVATIONS / 20);
  });
});

describe.skipIf(!serverUrl)('plans of exact counts, on analyzed data', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_count_plans_analyzed');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeObservations(db.custom, `${PROJECT}-other`, OBSERVATIONS / 2, 'x-');
    await db.custom.query('ANALYZE');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it("a count of a value most resources have reads that value's index rows, not the whole table", async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&_total=accurate&_count=5');
    const plan = countPlan(answer.statements);
    expect(plan).toMatch(/Index Only Scan using "?token_index_projectId_resourceType_code_value_system_idx"? on token_index x0/);
    expect(plan).not.toMatch(/Seq Scan on token_index/);
    expect(answer.total).toBe(OBSERVATIONS);
  });

  it("a count of two codes most resources have reads both codes' rows once, probing neither per row of the other", async () => {
    const answer = await db.explain(member, 'Observation', 'status=final&code=http://loinc.org|2339-0&_total=accurate&_count=5');
    const plan = countPlan(answer.statements);
    expect(plan).not.toMatch(/SubPlan|Nested Loop/);
    expect(answer.total).toBe(OBSERVATIONS - OBSERVATIONS / 20);
  });
});
