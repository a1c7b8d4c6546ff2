import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { Identity } from '../../src/identity/identity.js';
import type { Paging } from '../../src/search/result.js';
import { writeObservations, writeSubjects } from '../helpers/plan-database.js';
import { openSearchDatabase, recordedSearch } from '../helpers/recorded-search.js';

// Two projects whose Observations' lastUpdated interleave (and tie across them): the first's three
// a second, the second's one a second, its 7,001st at the first's start. Every Observation of the
// first names a `smith` patient: more references than a sorted page reads as candidates (51,200),
// so that no filter's candidates drive its pages. The second's name a `jones` up to its 7,000th,
// so that its walk from the start (6,432 resources for a page of 20 to 200) finds none and ends
// before the first's Observations begin.
const FIRST = { project: 'every-chain-walks-1', observations: 52000, patients: 2000, prefix: '' };
const SECOND = { project: 'every-chain-walks-2', observations: 8000, patients: 600, prefix: 'b', jones: 7000 };
const CHAIN = 'subject:Patient.name=smith';

const superAdmin: Identity = { projectId: 'every-chain-walks-admins', superAdmin: true };

/** What a search answered and sent. */
interface Answer {
  ids: string[];
  sent: string[];
  paging: Paging;
}

/**
 * A super admin's pages of a chain to common targets across every project, sorted by
 * `_lastUpdated` alone (pages by cursor, and `-_lastUpdated`): each project's resources are walked
 * in (lastUpdated, id) order from the cursor's position, the chain probed on each, and the walks
 * merged; never the general statement over every project, which without statistics started from
 * the chain's references. On the database the tests run on (PGlite, or PostgreSQL never analyzed).
 */
describe("a super admin's sorted pages of a common chain across every project", () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;
  /** Every match of CHAIN in every project, in (lastUpdated, id) order. */
  let chained: string[];

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_every_chain_walks'));
    // The pages read the resources' lastUpdated order and the chain's rows: no token or date rows.
    await writeObservations(db, FIRST.project, FIRST.observations, FIRST.prefix, { rows: [], perSecond: 3 });
    await writeSubjects(db, FIRST.project, FIRST.observations, FIRST.patients, FIRST.prefix);
    await writeObservations(db, SECOND.project, SECOND.observations, SECOND.prefix, { rows: [], firstSecond: -SECOND.jones });
    await writeSubjects(db, SECOND.project, SECOND.observations, SECOND.patients, SECOND.prefix, SECOND.jones + 1);
    await db.query(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       VALUES ('Patient', 'bjones', $1, gen_random_uuid(), timestamptz '2025-01-01', false, '{"resourceType":"Patient","id":"bjones"}')`,
      [SECOND.project],
    );
    await db.query(`INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact) VALUES ($1, 'Patient', 'bjones', 1, 'family', 'jones', 'Jones')`, [
      SECOND.project,
    ]);
    await db.query(
      `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
       SELECT $1, 'Observation', 'bo' || g, 1, 'subject', 'Patient', 'bjones', NULL FROM generate_series(1, $2::int) g`,
      [SECOND.project, SECOND.jones],
    );
    const rows = await db.query<{ id: string }>(
      `SELECT r.id FROM resource r JOIN reference_index f ON f."resourceType" = 'Observation' AND f."resourceId" = r.id AND f.code = 'subject'
       JOIN string_index s ON s."resourceType" = 'Patient' AND s."resourceId" = f."targetId" AND s.value LIKE 'smith%'
       WHERE r."resourceType" = 'Observation' ORDER BY r."lastUpdated", r.id`,
    );
    chained = rows.map(({ id }) => id);
  }, 180_000);

  afterAll(async () => {
    await close?.();
  });

  /** The search's page (after `cursor`, when given): its matches' ids, the statements it sent and its links. */
  async function page(query: string, cursor?: string): Promise<Answer> {
    const { result, sent } = await recordedSearch(db, superAdmin, 'Observation', `${query}${cursor ? `&_cursor=${cursor}` : ''}`);
    return { ids: result.matches.map(({ id }) => id), sent, paging: result.paging };
  }

  /** The cursor of a page's link. */
  const cursorOf = (link: Paging['next']): string | undefined => (link && 'cursor' in link ? link.cursor : undefined);

  /** The general statement (pages/general.ts pageRows): over the resources, or over every project's (everyProjectStatement). */
  const general = (sql: string) => /^SELECT [^(]* FROM resource r WHERE /.test(sql) || /^SELECT u\."resourceType", u\.id[^(]* FROM unnest\(/.test(sql);

  it('the data has matches in both projects, interleaved', () => {
    expect(chained).toHaveLength(53000);
    expect(chained.slice(0, 1000).filter((id) => id.startsWith('bo'))).toHaveLength(250);
  });

  it('cursor pages followed through their next links list every match of every project once, in (lastUpdated, id) order, none from the general statement', async () => {
    const ids: string[] = [];
    const sent: string[] = [];
    let cursor: string | undefined;
    do {
      const answer = await page(`${CHAIN}&_sort=_lastUpdated&_count=1000`, cursor);
      ids.push(...answer.ids);
      sent.push(...answer.sent);
      cursor = cursorOf(answer.paging.next);
    } while (cursor);
    expect(ids).toEqual(chained);
    expect(sent.filter(general)).toEqual([]);
  }, 300_000);

  it("a previous link of a cursor page gives the page before it", async () => {
    const first = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`);
    const second = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(first.paging.next));
    const third = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(second.paging.next));
    const back = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(third.paging.previous));
    expect([...first.ids, ...second.ids, ...third.ids]).toEqual(chained.slice(0, 60));
    expect(back.ids).toEqual(chained.slice(20, 40));
    expect([...first.sent, ...second.sent, ...third.sent, ...back.sent].filter(general)).toEqual([]);
  });

  it('a page sorted by -_lastUpdated holds the newest matches of every project, ties by id descending', async () => {
    const newest = [...chained].reverse();
    const first = await page(`${CHAIN}&_sort=-_lastUpdated&_count=100`);
    const offset = await page(`${CHAIN}&_sort=-_lastUpdated&_count=100&_offset=100`);
    expect(first.ids).toEqual(newest.slice(0, 100));
    expect(offset.ids).toEqual(newest.slice(100, 200));
    expect([...first.sent, ...offset.sent].filter(general)).toEqual([]);
  });
});
