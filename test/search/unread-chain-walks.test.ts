import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { Identity } from '../../src/identity/identity.js';
import { writeObservations, writeSubjects } from '../helpers/plan-database.js';
import { openSearchDatabase, recordedSearch } from '../helpers/recorded-search.js';

const PROJECT = 'unread-chain-walks';
const OBSERVATIONS = 20000;
const PATIENTS = 2000;
// Patients are updated a second apart from 2025-01-01: the chain's targets are those from the 1,000th on.
const CHAIN = 'subject:Patient._lastUpdated=ge2025-01-01T00:16:40Z';

const member: Identity = { projectId: PROJECT, superAdmin: false };

/**
 * Unsorted pages of a chain whose target's condition is not plain index rows (a chained
 * `_lastUpdated`, a resource column), which no chain's first read can drive: the project's
 * resources are walked in (lastUpdated, id) order and the chain probed on each, never the general
 * statement, which without statistics started from every subject reference of the project. On the
 * database the tests run on (PGlite, or PostgreSQL never analyzed).
 */
describe('unsorted pages of a chain on a resource column', () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;
  /** Every match in (lastUpdated, id) order. */
  let chained: string[];

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_unread_chain_walks'));
    await writeObservations(db, PROJECT, OBSERVATIONS);
    await writeSubjects(db, PROJECT, OBSERVATIONS, PATIENTS, '');
    const rows = await db.query<{ id: string }>(
      `SELECT r.id FROM resource r JOIN reference_index f ON f."resourceType" = 'Observation' AND f."resourceId" = r.id AND f.code = 'subject'
       JOIN resource t ON t."resourceType" = 'Patient' AND t.id = f."targetId" AND t."lastUpdated" >= timestamptz '2025-01-01T00:16:40Z'
       WHERE r."resourceType" = 'Observation' ORDER BY r."lastUpdated", r.id`,
    );
    chained = rows.map(({ id }) => id);
  }, 180_000);

  afterAll(async () => {
    await close?.();
  });

  /** The general statement over the project's resources (pages/general.ts pageRows). */
  const general = (sql: string) => /^SELECT [^(]* FROM resource r WHERE /.test(sql);

  it('a page and the next by offset hold the first matches in (lastUpdated, id) order, none from the general statement', async () => {
    const first = await recordedSearch(db, member, 'Observation', `${CHAIN}&_count=20&_project=${PROJECT}`);
    const second = await recordedSearch(db, member, 'Observation', `${CHAIN}&_count=20&_offset=20&_project=${PROJECT}`);
    expect(chained.length).toBeGreaterThan(6400);
    expect([...first.result.matches, ...second.result.matches].map(({ id }) => id)).toEqual(chained.slice(0, 40));
    expect([...first.sent, ...second.sent].filter(general)).toEqual([]);
  });
});
