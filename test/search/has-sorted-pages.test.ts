import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { Identity } from '../../src/identity/identity.js';
import { writeObservations, writeSubjects } from '../helpers/plan-database.js';
import { openSearchDatabase, recordedSearch } from '../helpers/recorded-search.js';

const PROJECT = 'has-sorted-pages';
// writeObservations: every twentieth Observation has code 8867-4 (1,000 of them, the subjects of
// 100 Patients), the others 2339-0 (19,000, every other Patient's).
const OBSERVATIONS = 20000;
const PATIENTS = 2000;
const RARE = 'http://loinc.org|8867-4';
const COMMON = 'http://loinc.org|2339-0';

const member: Identity = { projectId: PROJECT, superAdmin: false };

/** The Patients (`pat<p>`, family `smith<p>`) some Observation of 8867-4 (rare) or of 2339-0 references, in family order (byte order), ascending or descending. */
function byFamily(rare: boolean, descending: boolean): string[] {
  const ids: string[] = [];
  for (let p = 1; p <= PATIENTS; p++) if (((p - 1) % 20 === 0) === rare) ids.push(`pat${p}`);
  const family = (id: string) => Buffer.from(`smith${id.slice(3)}`);
  const sorted = ids.sort((a, b) => Buffer.compare(family(a), family(b)));
  return descending ? sorted.reverse() : sorted;
}

/**
 * Pages of `_has` searches on the database the tests run on (PGlite, or PostgreSQL never
 * analyzed): a sorted page of the `_has`'s candidates sorts them on their own index rows and reads
 * only the page's resources, never the general statement over every candidate's resource; a
 * `_has` probed per resource seeks its referencing resources' `system|code` in the token value
 * index, not through the primary key.
 */
describe('pages of _has searches sorted on their candidates, and probes of system|code', () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_has_sorted_pages'));
    // The pages read the code rows, the subjects and the names: no status or date rows.
    await writeObservations(db, PROJECT, OBSERVATIONS, '', { rows: ['code'] });
    await writeSubjects(db, PROJECT, OBSERVATIONS, PATIENTS, '');
  }, 180_000);

  afterAll(async () => {
    await close?.();
  });

  async function searched(query: string): Promise<{ ids: string[]; sent: string[] }> {
    const { result, sent } = await recordedSearch(db, member, 'Patient', `${query}&_project=${PROJECT}`);
    return { ids: result.matches.map(({ id }) => id), sent };
  }

  /** The general statement over the candidates' resources (pages/general.ts pageRows of a driven page). */
  const general = (sql: string) => /^SELECT [^(]* FROM resource r WHERE r\."resourceType" = \$\d+ AND r\.id = ANY\(ARRAY\(/.test(sql);
  /** The page of candidates sorted on their index rows (pages/candidates-sorted.ts). */
  const sortedCandidates = (sql: string) => /^SELECT .* FROM \(SELECT d\.id, .* FROM unnest\(.*\) p CROSS JOIN LATERAL \(SELECT \* FROM resource r /.test(sql);

  it('a page sorted by -family reads the candidates sorted on their family rows, then only the page', async () => {
    const { ids, sent } = await searched(`_has:Observation:subject:code=${RARE}&_sort=-family&_count=5`);
    expect(ids).toEqual(byFamily(true, true).slice(0, 5));
    expect(sent.filter(sortedCandidates)).toHaveLength(1);
    expect(sent.filter(general)).toEqual([]);
  });

  it('a later page sorted by family holds the next candidates in that order', async () => {
    const { ids, sent } = await searched(`_has:Observation:subject:code=${RARE}&_sort=family&_count=7&_offset=14`);
    expect(ids).toEqual(byFamily(true, false).slice(14, 21));
    expect(sent.filter(sortedCandidates)).toHaveLength(1);
    expect(sent.filter(general)).toEqual([]);
  });

  it('the candidates are the targets of the referencing rows, read by their ids alone', async () => {
    const { sent } = await searched(`_has:Observation:subject:code=${RARE}&_sort=-family&_count=5`);
    expect(sent.filter((sql) => sql.startsWith('SELECT DISTINCT h."targetId" COLLATE "C" AS id FROM reference_index h'))).toHaveLength(1);
  });

  it('a _has probed per Patient seeks each Observation in the token value index, and the page is in family order', async () => {
    const { ids, sent } = await searched(`_has:Observation:subject:code=${COMMON}&_sort=family&_count=6`);
    expect(ids).toEqual(byFamily(false, false).slice(0, 6));
    const probes = sent.filter((sql) => sql.includes('FROM token_index x1 '));
    expect(probes.length).toBeGreaterThan(0);
    expect(probes.filter((sql) => sql.includes('ORDER BY x1.seq'))).toEqual([]);
    expect(probes.filter((sql) => sql.includes('FROM token_index x1 WHERE x1."projectId" = s1."projectId"'))).toEqual(probes);
  });
});
