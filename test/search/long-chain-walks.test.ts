import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { Identity } from '../../src/identity/identity.js';
import { writeObservations, writeSubjects } from '../helpers/plan-database.js';
import { openSearchDatabase, recordedSearch } from '../helpers/recorded-search.js';

const PROJECT = 'long-chain-walks';
// The oldest 52,000 Observations name the `smith` patients: more references than a sorted page
// reads as candidates (51,200). The newest 8,000 name one `jones`, more than a page's walk reads (6,400).
const OBSERVATIONS = 60000;
const SMITHS = 52000;
const PATIENTS = 2000;

const member: Identity = { projectId: PROJECT, superAdmin: false };

/**
 * Sorted pages of a chain alone whose references are more than any filter's candidates a page
 * reads, and whose matches lie past the first walk of the order: the walk goes on (up to 51,200
 * resources, each probed once, stopping at the page) instead of the general statement, which
 * without statistics started from the chain's references. On the database the tests run on
 * (PGlite, or PostgreSQL never analyzed).
 */
describe('sorted pages of a common chain whose matches lie deep in the order', () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_long_chain_walks'));
    // The pages read the date rows and the resources' lastUpdated order: no token rows.
    await writeObservations(db, PROJECT, OBSERVATIONS, '', { rows: ['date'] });
    await writeSubjects(db, PROJECT, SMITHS, PATIENTS, '');
    await db.query(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       VALUES ('Patient', 'jones', $1, gen_random_uuid(), timestamptz '2025-01-01', false, '{"resourceType":"Patient","id":"jones"}')`,
      [PROJECT],
    );
    await db.query(`INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact) VALUES ($1, 'Patient', 'jones', 1, 'family', 'jones', 'Jones')`, [PROJECT]);
    await db.query(
      `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
       SELECT $1, 'Observation', 'o' || g, 1, 'subject', 'Patient', 'jones', NULL FROM generate_series($2::int + 1, $3::int) g`,
      [PROJECT, SMITHS, OBSERVATIONS],
    );
  }, 180_000);

  afterAll(async () => {
    await close?.();
  });

  /** The search's matches' ids and the statements it sent. */
  async function searched(query: string): Promise<{ ids: string[]; sent: string[] }> {
    const { result, sent } = await recordedSearch(db, member, 'Observation', `${query}&_project=${PROJECT}`);
    return { ids: result.matches.map(({ id }) => id), sent };
  }

  /** The general statement over the project's resources (pages/general.ts pageRows). */
  const general = (sql: string) => /^SELECT [^(]* FROM resource r WHERE /.test(sql);

  it('a page sorted by -date walks on past the newest Observations to the newest of the chain', async () => {
    const { ids, sent } = await searched('subject:Patient.name=smith&_sort=-date&_count=5');
    // An Observation's date grows with its number.
    expect(ids).toEqual(['o52000', 'o51999', 'o51998', 'o51997', 'o51996']);
    expect(sent.filter(general)).toEqual([]);
  });

  it('a page sorted by -_lastUpdated walks on past the newest Observations to the newest of the chain', async () => {
    const { ids, sent } = await searched('subject:Patient.name=smith&_sort=-_lastUpdated&_count=5');
    expect(ids).toEqual(['o52000', 'o51999', 'o51998', 'o51997', 'o51996']);
    expect(sent.filter(general)).toEqual([]);
  });
});
