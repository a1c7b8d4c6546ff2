import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { Identity } from '../../src/identity/identity.js';
import { writeObservations } from '../helpers/plan-database.js';
import { openSearchDatabase, recordedSearch } from '../helpers/recorded-search.js';

const PROJECT = 'date-bound-pages';
// writeObservations: Observation o<g> is dated 2023-01-01 plus g hours.
const OBSERVATIONS = 8000;
/** An Observation whose only date row is open at its start and ends after every other. */
const OPEN_START = 'open-start';

const member: Identity = { projectId: PROJECT, superAdmin: false };

/** The Observations dated before `day` (2023-01-01 plus g hours), newest first. */
function datedBefore(day: string): string[] {
  const ids: string[] = [];
  for (let g = OBSERVATIONS; g >= 1; g--) if (Date.parse('2023-01-01T00:00:00Z') + g * 3_600_000 < Date.parse(`${day}T00:00:00Z`)) ids.push(`o${g}`);
  return ids;
}

/**
 * Sorted pages with a one-sided date bound that few resources meet, on the database the tests run
 * on (PGlite, or PostgreSQL never analyzed): the bound's resources are read first and sorted, not
 * sought along the sort's windows; with more than a first window's worth, once the windows fell
 * short, before the general statement. A period open at its start meets every upper bound. A
 * sorted page whose walk fell short is driven by its token code's resources when they are few.
 */
describe('sorted pages driven by a rare one-sided date bound or a token code', () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_date_bound_pages'));
    await writeObservations(db, PROJECT, OBSERVATIONS);
    await db.query(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       VALUES ('Observation', $2, $1, gen_random_uuid(), timestamptz '2025-01-01', false, json_build_object('resourceType', 'Observation', 'id', $2::text))`,
      [PROJECT, OPEN_START],
    );
    await db.query(`INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end") VALUES ($1, 'Observation', $2, 1, 'date', NULL, timestamptz '2024-06-01')`, [
      PROJECT,
      OPEN_START,
    ]);
  }, 120_000);

  afterAll(async () => {
    await close?.();
  });

  async function searched(query: string): Promise<{ ids: string[]; sent: string[] }> {
    const { result, sent } = await recordedSearch(db, member, 'Observation', `${query}&_project=${PROJECT}`);
    return { ids: result.matches.map(({ id }) => id), sent };
  }

  /** The read of the bound's candidates (pages/date-bound-driven.ts). */
  const boundRead = (sql: string) => sql.startsWith('SELECT c."resourceId" FROM ((SELECT w."resourceId" FROM date_index w');
  /** A window of the `-date` sort's rows (pages/growing-windows.ts, sorted-window.ts). */
  const sortWindow = (sql: string) => sql.includes('COALESCE(w."end", w.start) DESC');
  /** The general statement over every resource of the type. */
  const general = (sql: string) => /^SELECT [^(]* FROM resource r WHERE r\."resourceType" = \$1 AND r\."projectId" = \$2 /.test(sql);

  it('a bound that names fewer resources than a window drives the page before any window', async () => {
    const { ids, sent } = await searched('date=lt2023-01-02&_sort=-date&_count=5');
    expect(ids).toEqual([OPEN_START, ...datedBefore('2023-01-02').slice(0, 4)]);
    expect(sent.filter(boundRead)).toHaveLength(1);
    expect(sent.filter(sortWindow)).toEqual([]);
  });

  it('a bound that names more drives the page once the windows fell short, not the general statement', async () => {
    const { ids, sent } = await searched('date=lt2023-02-12&_sort=-date&_count=5&_offset=3');
    expect(ids).toEqual([OPEN_START, ...datedBefore('2023-02-12')].slice(3, 8));
    expect(sent.filter(boundRead)).toHaveLength(2);
    expect(sent.filter(general)).toEqual([]);
  });

  it("a page sorted by -_lastUpdated whose walk falls short is driven by its token code's resources, not the general statement", async () => {
    // Every twentieth Observation has code 8867-4, and only o1-o23 are dated 2023-01-01: the walk
    // from the newest meets the code at once and the date nowhere near.
    const { ids, sent } = await searched('code=http://loinc.org|8867-4&date=2023-01-01&_sort=-_lastUpdated&_count=5');
    expect(ids).toEqual(['o20']);
    expect(sent.filter((sql) => sql.startsWith('SELECT count(*)::int AS n FROM (SELECT w."resourceId" FROM token_index w'))).toHaveLength(1);
    expect(sent.filter(general)).toEqual([]);
  });

  it('a lower bound that nothing meets answers an empty page from its candidates', async () => {
    const { ids, sent } = await searched('date=gt2030-01-01&_sort=date&_count=5');
    expect(ids).toEqual([]);
    expect(sent.filter(boundRead)).toHaveLength(1);
    expect(sent.filter(general)).toEqual([]);
  });
});
