import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { openPlanDatabase, searchPlans as plansOfReads, writeObservations, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'criteria-plans';
const OBSERVATIONS = 20000;

/** A member whose AccessPolicy narrows Observation by a broad value, as policies do. */
const member: Identity = {
  projectId: PROJECT,
  superAdmin: false,
  accessPolicy: { policyId: 'final-only', resources: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' }] },
};

/** The value index of token rows, whose resourceId comes after value and system. */
const TOKEN_VALUE_INDEX = 'token_index_projectId_resourceType_code_value_system_idx';

/**
 * The plans of a member's searches whose AccessPolicy criteria narrow the type, on PostgreSQL
 * tables written since their last ANALYZE (never analyzed here): every statement explained as the
 * server plans it (planOnce ones generic on the plan-once pool's settings, the others for their
 * values). The criteria must be probed per resource through the token table's primary key: through
 * the value index each resource read every `status=final` row up to its own.
 */
describe.skipIf(!serverUrl)('plans of searches narrowed by AccessPolicy criteria, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_criteria_plans');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  const plansOf = (resourceType: string, query: string) => db.plansOf(member, resourceType, query);
  const searchPlans = async (query: string) => plansOfReads(await plansOf('Observation', query));

  it('a page in _lastUpdated order probes the criteria per resource by primary key', async () => {
    const plan = await searchPlans('_sort=-_lastUpdated&_count=20');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0\s+Index Cond: \(\("resourceType" = r\."resourceType"\) AND \("resourceId" = r\.id\)\)/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
  });

  it('an unsorted page probes the criteria per resource instead of reading every matching row', async () => {
    const plan = await searchPlans('_count=20');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
  });

  it('a date range page probes the criteria per resource of the range', async () => {
    const plan = await searchPlans('date=ge2023-03-01&date=le2023-03-31');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
  });

  it('an exact count reads the index tables, not the resources', async () => {
    const plans = await plansOf('Observation', 'code=http://loinc.org|8867-4&_count=1&_total=accurate');
    const count = plans.find(({ sql }) => sql.includes('::int AS n'));
    expect(count).toBeDefined();
    expect(count!.plan).not.toMatch(/on resource r\b/);
  });
});
