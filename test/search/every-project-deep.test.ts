import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { newestWithCode, openPlanDatabase, writeObservations, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'deep-pages';
const OTHER_PROJECT = 'deep-pages-other';
/** More date rows than the largest window (6,400) holds a page of 406 of the code's matches in: a twentieth have it. */
const OBSERVATIONS = 40000;

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };

/**
 * Deep pages of a super admin's search of every project sorted by date, on PostgreSQL tables never
 * analyzed: a project whose windows of date rows fall short of the page is read from its rows of
 * the code, not by the general statement (which read every match and each one's resource, or,
 * analyzed, the whole resource table once per project).
 */
describe.skipIf(!serverUrl)('deep every-project pages sorted by date, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_deep_pages');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeObservations(db.custom, OTHER_PROJECT, OBSERVATIONS / 10, 'x-');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it("a page whose windows fall short in a large project reads that project's rows of the code, not the general statement", async () => {
    // 2,000 rows of the code, more than the first window (1,624); 320 matches in the largest window, fewer than 406.
    const answer = await db.explain(superAdmin, 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_count=5&_offset=400');
    const general = answer.statements.filter(({ sql }) => sql.includes('FROM resource r WHERE r."projectId" = p.id'));
    expect(general.flatMap(({ args }) => args.filter(Array.isArray).flat())).not.toContain(PROJECT);
    expect(answer.ids).toEqual((await newestWithCode(db.custom, '8867-4')).slice(400, 405));
  });

  it('a page deeper than the largest window answers from the rows of the code', async () => {
    const answer = await db.explain(superAdmin, 'Observation', 'code=http://loinc.org|8867-4&_sort=-date&_count=5&_offset=1700');
    expect(answer.ids).toEqual((await newestWithCode(db.custom, '8867-4')).slice(1700, 1705));
  });
});
