import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { Identity } from '../../src/identity/identity.js';
import type { Paging } from '../../src/search/result.js';
import { writeObservations, writeSubjects } from '../helpers/plan-database.js';
import { openSearchDatabase, recordedSearch } from '../helpers/recorded-search.js';

const PROJECT = 'cursor-chain-pages';
// More references to the chain's patients (`smith1`: smith1, smith10.., smith1999, 1,111 of 2,000)
// than a chain's first read takes (6,400), so that the chain is common.
const OBSERVATIONS = 20000;
const PATIENTS = 2000;
const CHAIN = 'subject:Patient.name=smith1';
/**
 * Observations a rarer filter names: every 250th from o7, half of them a `smith1` patient's (40):
 * about 13 among each 6,400 Observations a page of 20 walks.
 */
const RARE = 'value-quantity=99.9';

/**
 * A chain whose target's condition is not plain index rows (a chained `_lastUpdated`, a resource
 * column), which no chain's first read can drive. Patients are updated a second apart from
 * 2025-01-01: its targets are those from the 1,000th on.
 */
const UNREAD_CHAIN = 'subject:Patient._lastUpdated=ge2025-01-01T00:16:40Z';

/**
 * Chains whose target's condition is a `:missing` or `:not` (no first read drives them): every
 * Patient is male but FEMALE's, and GENDERLESS have no gender, so that these chains' matches are
 * rare (GENDERLESS and FEMALE's ten Observations each), and NO_TARGET's absent (every Patient has a family).
 */
const FEMALE = [5, 999, 1500];
const GENDERLESS = [17, 1234];
const NOT_MALE = 'subject:Patient.gender:not=male';
const MISSING = 'subject:Patient.gender:missing=true';
const NO_TARGET = 'subject:Patient.family:missing=true';

const member: Identity = { projectId: PROJECT, superAdmin: false };
const superAdmin: Identity = { projectId: 'cursor-chain-admins', superAdmin: true };

/** What a search answered and sent. */
interface Answer {
  ids: string[];
  sent: string[];
  paging: Paging;
}

/**
 * Pages by cursor (`_sort=_lastUpdated`) of a chain to common targets: each page walks the
 * project's resources in (lastUpdated, id) order from its cursor's position and probes the chain
 * on each, or, when its matches are too rare for the walk, reads a rarer filter's resources after
 * the position; never the general statement, which without statistics started from the chain's
 * references. Observations share their lastUpdated three by three, so that the cursor's id breaks
 * ties. On the database the tests run on (PGlite, or PostgreSQL never analyzed).
 */
describe('cursor pages of a chain to common targets', () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;
  /** Every match of CHAIN, and of CHAIN with RARE, in (lastUpdated, id) order. */
  let chained: string[];
  let rare: string[];
  /** Every match of UNREAD_CHAIN in (lastUpdated, id) order. */
  let unread: string[];
  /** Every match of NOT_MALE, and of MISSING, in (lastUpdated, id) order. */
  let notMale: string[];
  let missing: string[];

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_cursor_chain_pages'));
    // The pages read the resources' lastUpdated order, the chain's rows and the quantity rows: no token or date rows.
    await writeObservations(db, PROJECT, OBSERVATIONS, '', { rows: [], perSecond: 3 });
    await writeSubjects(db, PROJECT, OBSERVATIONS, PATIENTS, '');
    await db.query(
      `INSERT INTO quantity_index ("projectId", "resourceType", "resourceId", seq, code, value, system, unit)
       SELECT $1, 'Observation', 'o' || g, 1, 'value-quantity', 99.9, 'http://unitsofmeasure.org', 'kg' FROM generate_series(7, $2::int, 250) g`,
      [PROJECT, OBSERVATIONS],
    );
    const matches = async (rareOnly: boolean) =>
      (
        await db.query<{ id: string }>(
          `SELECT r.id FROM resource r JOIN reference_index f ON f."resourceType" = 'Observation' AND f."resourceId" = r.id AND f.code = 'subject'
           JOIN string_index s ON s."resourceType" = 'Patient' AND s."resourceId" = f."targetId" AND s.value LIKE 'smith1%'
           WHERE r."resourceType" = 'Observation' AND (NOT $1 OR EXISTS (SELECT 1 FROM quantity_index q WHERE q."resourceId" = r.id))
           ORDER BY r."lastUpdated", r.id`,
          [rareOnly],
        )
      ).map(({ id }) => id);
    chained = await matches(false);
    rare = await matches(true);
    const targetsUpdated = await db.query<{ id: string }>(
      `SELECT r.id FROM resource r JOIN reference_index f ON f."resourceType" = 'Observation' AND f."resourceId" = r.id AND f.code = 'subject'
       JOIN resource t ON t."resourceType" = 'Patient' AND t.id = f."targetId" AND t."lastUpdated" >= timestamptz '2025-01-01T00:16:40Z'
       WHERE r."resourceType" = 'Observation' ORDER BY r."lastUpdated", r.id`,
    );
    unread = targetsUpdated.map(({ id }) => id);
    await db.query(
      `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
       SELECT $1, 'Patient', 'pat' || g, 1, 'gender', NULL, CASE WHEN g = ANY($3::int[]) THEN 'female' ELSE 'male' END, NULL
       FROM generate_series(1, $2::int) g WHERE g <> ALL($4::int[])`,
      [PROJECT, PATIENTS, FEMALE, GENDERLESS],
    );
    const referencing = async (patients: number[]) =>
      (
        await db.query<{ id: string }>(
          `SELECT r.id FROM resource r JOIN reference_index f ON f."resourceType" = 'Observation' AND f."resourceId" = r.id AND f.code = 'subject'
           WHERE r."resourceType" = 'Observation' AND f."targetId" = ANY($1::text[]) ORDER BY r."lastUpdated", r.id`,
          [patients.map((g) => `pat${g}`)],
        )
      ).map(({ id }) => id);
    notMale = await referencing([...FEMALE, ...GENDERLESS]);
    missing = await referencing(GENDERLESS);
  }, 180_000);

  afterAll(async () => {
    await close?.();
  });

  /** The search's page (after `cursor`, when given): its matches' ids, the statements it sent and its links. */
  async function page(query: string, cursor?: string, who = member): Promise<Answer> {
    const project = who === member ? `&_project=${PROJECT}` : '';
    const { result, sent } = await recordedSearch(db, who, 'Observation', `${query}${project}${cursor ? `&_cursor=${cursor}` : ''}`);
    return { ids: result.matches.map(({ id }) => id), sent, paging: result.paging };
  }

  /** The cursor of a page's link. */
  const cursorOf = (link: Paging['next']): string | undefined => (link && 'cursor' in link ? link.cursor : undefined);

  /** The general statement over the project's resources (pages/general.ts pageRows). */
  const general = (sql: string) => /^SELECT [^(]* FROM resource r WHERE /.test(sql);

  /** Every page of the search from its first, through each page's next link: their ids and statements. */
  async function walk(query: string, who = member): Promise<{ ids: string[]; sent: string[] }> {
    const ids: string[] = [];
    const sent: string[] = [];
    let cursor: string | undefined;
    do {
      const answer = await page(query, cursor, who);
      ids.push(...answer.ids);
      sent.push(...answer.sent);
      cursor = cursorOf(answer.paging.next);
    } while (cursor);
    return { ids, sent };
  }

  it('pages of a chain followed through their next links list every match once, in (lastUpdated, id) order, none from the general statement', async () => {
    const { ids, sent } = await walk(`${CHAIN}&_sort=_lastUpdated&_count=200`);
    expect(ids).toEqual(chained);
    expect(sent.filter(general)).toEqual([]);
  });

  it("a super admin's cursor pages of a chain with a rarer filter, across every project, are read from that filter: every match once, in order", async () => {
    const { ids, sent } = await walk(`${CHAIN}&${RARE}&_sort=_lastUpdated&_count=20`, superAdmin);
    expect(ids).toEqual(rare);
    expect(sent.filter(general)).toEqual([]);
  });

  it("a cursor's page of a chain holds the matches right after the cursor's row", async () => {
    const first = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`);
    const second = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(first.paging.next));
    expect([...first.ids, ...second.ids]).toEqual(chained.slice(0, 40));
    expect(second.sent.filter(general)).toEqual([]);
  });

  it("a previous link of a chain's cursor page gives the page before it", async () => {
    const first = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`);
    const second = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(first.paging.next));
    const third = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(second.paging.next));
    const back = await page(`${CHAIN}&_sort=_lastUpdated&_count=20`, cursorOf(third.paging.previous));
    expect(back.ids).toEqual(chained.slice(20, 40));
    expect(back.sent.filter(general)).toEqual([]);
  });

  it('cursor pages of a chain with a rarer filter, too rare for the walk, are read from that filter after the cursor', async () => {
    const first = await page(`${CHAIN}&${RARE}&_sort=_lastUpdated&_count=20`);
    const second = await page(`${CHAIN}&${RARE}&_sort=_lastUpdated&_count=20`, cursorOf(first.paging.next));
    expect(rare).toHaveLength(40);
    expect([...first.ids, ...second.ids]).toEqual(rare);
    expect(cursorOf(second.paging.next)).toBeUndefined();
    expect([...first.sent, ...second.sent].filter(general)).toEqual([]);
  });

  it("a previous link of a chain's cursor page read from a rarer filter gives the page before it", async () => {
    const first = await page(`${CHAIN}&${RARE}&_sort=_lastUpdated&_count=20`);
    const second = await page(`${CHAIN}&${RARE}&_sort=_lastUpdated&_count=20`, cursorOf(first.paging.next));
    const back = await page(`${CHAIN}&${RARE}&_sort=_lastUpdated&_count=20`, cursorOf(second.paging.previous));
    expect(back.ids).toEqual(rare.slice(0, 20));
    expect(back.sent.filter(general)).toEqual([]);
  });

  // Unsorted pages of UNREAD_CHAIN: the project's resources are walked in (lastUpdated, id) order
  // and the chain probed on each, never the general statement, which without statistics started
  // from every subject reference of the project.
  it('unsorted pages of a chain no first read drives hold the first matches in (lastUpdated, id) order, none from the general statement', async () => {
    const first = await recordedSearch(db, member, 'Observation', `${UNREAD_CHAIN}&_count=20&_project=${PROJECT}`);
    const second = await recordedSearch(db, member, 'Observation', `${UNREAD_CHAIN}&_count=20&_offset=20&_project=${PROJECT}`);
    expect(unread.length).toBeGreaterThan(6400);
    expect([...first.result.matches, ...second.result.matches].map(({ id }) => id)).toEqual(unread.slice(0, 40));
    expect([...first.sent, ...second.sent].filter(general)).toEqual([]);
  });

  // Chains to rare or absent `:not` and `:missing` targets: after the first walk, their targets
  // are found from the Patients and the page read from the references to them: no second, longer
  // walk and no general statement over the Observations (both probed the chain on every one).
  /** A page's walks of the (lastUpdated, id) index that probe the chain (updatedWalkPage). */
  const walks = (sql: string) => sql.includes('CROSS JOIN LATERAL (SELECT r."projectId", r."resourceType", r.id) d');
  /** The general statement with the search's own conditions, not a driven page's candidates. */
  const undriven = (sql: string) => general(sql) && !sql.includes('= ANY(ARRAY(SELECT d.id FROM (');

  it('an unsorted page of a chain to rare `:not` targets holds their referencing resources, read from the targets after one walk', async () => {
    const answer = await page(`${NOT_MALE}&_count=20`);
    expect(answer.ids).toEqual(notMale.slice(0, 20));
    expect(answer.sent.filter(walks)).toHaveLength(1);
    expect(answer.sent.filter(undriven)).toEqual([]);
  });

  it('the next pages of a chain to rare `:missing` targets, by offset, end at its last match', async () => {
    const first = await page(`${MISSING}&_count=15`);
    const next = first.paging.next;
    const offset = next && 'offset' in next ? next.offset : undefined;
    const second = await page(`${MISSING}&_count=15&_offset=${offset}`);
    expect([...first.ids, ...second.ids]).toEqual(missing);
    expect(second.paging.next).toBeUndefined();
    expect([...first.sent, ...second.sent].filter(walks)).toHaveLength(2);
  });

  it('a page of a chain no target meets is empty after one walk', async () => {
    const answer = await page(`${NO_TARGET}&_count=20`);
    expect(answer.ids).toEqual([]);
    expect(answer.sent.filter(walks)).toHaveLength(1);
    expect(answer.sent.filter(undriven)).toEqual([]);
  });

  it('pages by `-_lastUpdated` of a chain to rare `:not` targets, followed through their next links, are read from the targets, never the general statement', async () => {
    const ids: string[] = [];
    const sent: string[] = [];
    let next: Paging['next'] = { offset: 0 };
    while (next) {
      const link = 'cursor' in next ? `&_cursor=${next.cursor}` : `&_offset=${next.offset}`;
      const answer = await page(`${NOT_MALE}&_sort=-_lastUpdated&_count=20${link}`);
      ids.push(...answer.ids);
      sent.push(...answer.sent);
      next = answer.paging.next;
    }
    expect(ids).toEqual([...notMale].reverse());
    expect(sent.filter(undriven)).toEqual([]);
  });

  it('cursor pages of a chain to rare `:not` targets, followed through their next links, list every match once, in order, from the targets', async () => {
    const { ids, sent } = await walk(`${NOT_MALE}&_sort=_lastUpdated&_count=20`);
    expect(ids).toEqual(notMale);
    expect(sent.filter(undriven)).toEqual([]);
  });

  it('an exact total of a chain to rare `:not` targets counts their referencing resources from the targets', async () => {
    const { result, sent } = await recordedSearch(db, member, 'Observation', `${NOT_MALE}&_count=20&_total=accurate&_project=${PROJECT}`);
    expect(result.total).toEqual({ value: notMale.length, exact: true });
    expect(sent.filter((sql) => sql.startsWith('SELECT count(*)'))).toEqual([expect.stringContaining('= ANY(ARRAY(SELECT d.id FROM (')]);
    // The targets are read once, for the page and the count.
    expect(sent.filter((sql) => sql.includes('row_number() OVER'))).toHaveLength(1);
  });
});
