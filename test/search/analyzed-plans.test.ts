import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { openPlanDatabase, searchPlans, writeObservations, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'analyzed-plans';
const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };

/**
 * Plans of searches on PostgreSQL tables that were analyzed, where one project holds no
 * Observations: statistics spread rows evenly over the projects and call `status=final` common, so
 * an unordered LIMIT of a project's rows looks cheapest as a sequential scan, which for the empty
 * project reads the whole table. The bounded reads of a project's rows must follow an index
 * instead, and a union parameter's codes must each stop at the bound.
 */
describe.skipIf(!serverUrl)('plans of searches on analyzed data, one project without Observations', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_analyzed_plans');
    await writeObservations(db.custom, PROJECT, 30000);
    await writeObservations(db.custom, `${PROJECT}-other`, 3000, 'x-');
    await db.custom.query(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       VALUES ('Patient', 'only-patient', $1, gen_random_uuid(), now(), false, '{"resourceType":"Patient","id":"only-patient"}')`,
      [`${PROJECT}-patients-only`],
    );
    await db.custom.query('ANALYZE');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('a search sorted by date with a filter most rows meet reads no index table by a sequential scan', async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'status=final&_sort=-date&_count=5');
    expect(searchPlans(answer.statements)).not.toMatch(/Seq Scan on (date|token)_index/);
    expect(answer.ids).toEqual(['o30000', 'o29999', 'o29998', 'o29997', 'o29996']);
  });

  it('a search sorted by date by a common token code and a less common one counts their rows through the index', async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'status=final&code=http://loinc.org|8867-4&_sort=-date&_count=3');
    expect(searchPlans(answer.statements)).not.toMatch(/Seq Scan on (date|token)_index/);
    expect(answer.ids).toEqual(['o30000', 'o29980', 'o29960']);
  });
  it("a search by a union parameter's code and a common one counts each of the union's codes up to the bound, not all their rows", async () => {
    const answer = await db.explain(member, 'Observation', 'combo-code=http://loinc.org|8867-4&status=final&_count=3');
    const counts = searchPlans(answer.statements.filter(({ sql }) => sql.startsWith('SELECT count(*)')));
    // Each code read in index order up to the bound and merged, not every row of each sorted.
    expect(counts).not.toMatch(/->  Sort\s/);
    expect(answer.ids).toEqual(['o100', 'o1000', 'o10000']);
  });
});
