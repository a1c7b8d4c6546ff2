import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { EverythingPosition } from '../../src/clinical/everything-cursor.js';
import type { RecordFilters } from '../../src/clinical/record-conditions.js';
import type { RecordSource } from '../../src/clinical/record-pages.js';
import { readWalkPage } from '../../src/clinical/record-walk.js';
import { openSearchDatabase, recordingExecutor } from '../helpers/recorded-search.js';

/** A patient's record in RECORD Observations, the size at which reading the whole record for each referenced page shows. */
const RECORD = 300;

/** A statement that reads the reference rows of each resource of the record (the whole record, whatever the page). */
const READS_RECORD_REFERENCES = /JOIN reference_index ref ON ref\."resourceType" = c\."resourceType" AND ref\."resourceId" = c\."resourceId"/;

/** A reference row: the referencing resource, its code and its target. */
type Reference = [type: string, id: string, code: string, targetType: string, targetId: string];

/** The statement that counts the record's rows and the followed rows to choose the side a page is read from. */
const COUNTS = /^WITH record AS \(SELECT count\(\*\) AS n FROM/;

/** One walk of a record: its entries (`part type/id`), page by page, every statement it sent, and the pages (by number) that counted. */
interface Walk {
  pages: string[][];
  sent: string[];
  counted: number[];
}

/**
 * The referenced part of Patient/$everything (record-referenced.ts) on the database the tests run
 * on (PGlite, or PostgreSQL never analyzed): when the project's references to followed types are
 * fewer than the record's compartment rows, a page is read from them, each probed for a
 * referencing resource in the record, not from the whole record; either way the part lists each
 * referenced resource once, after the compartment, in (type, id) order, counted by `_count`.
 */
describe('Patient/$everything: the referenced part', () => {
  let db: Database;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ db, close } = await openSearchDatabase('flint_everything_referenced'));
  }, 60_000);

  afterAll(async () => {
    await close?.();
  });

  /** Every page of `patientId`'s record in `projectId` (pages of `count`), as a member reads it; `between` runs after each page. */
  async function walk(
    projectId: string,
    patientId: string,
    count: number,
    filters: RecordFilters = {},
    between?: (pages: number) => Promise<void>,
  ): Promise<Walk> {
    const sent: string[] = [];
    const source: RecordSource = {
      db: recordingExecutor(db, sent),
      identity: { projectId, superAdmin: false },
      projectId,
      filters,
      compileContext: (args) => ({ args, scope: { projectIds: [projectId] }, fhirBase: 'http://flint.test/fhir/R4', depth: 0 }),
    };
    const pages: string[][] = [];
    const counted: number[] = [];
    let from: EverythingPosition | undefined;
    do {
      const before = sent.length;
      const page = await readWalkPage(source, { kind: 'patient', patientId: `${projectId}.${patientId}` }, from, count);
      if (sent.slice(before).some((sql) => COUNTS.test(sql))) counted.push(pages.length);
      pages.push(page.entries.map(({ row, part }) => `${part} ${row.resourceType}/${row.id.slice(projectId.length + 1)}`));
      from = page.next;
      await between?.(pages.length);
    } while (from && pages.length < 100);
    return { pages, sent, counted };
  }

  /** The walk's referenced entries (`Type/id`), in order. */
  const included = ({ pages }: Walk) => pages.flat().filter((entry) => entry.startsWith('include ')).map((entry) => entry.slice('include '.length));

  it('reads nothing of a large record for its referenced part when the project holds nothing to follow', async () => {
    const project = 'ev-ref-nothing';
    await writeRecord(db, project, 'p1', RECORD, () => []);
    const answer = await walk(project, 'p1', 100);
    expect(answer.pages.flat()).toHaveLength(RECORD + 1);
    expect(included(answer)).toEqual([]);
    expect(answer.sent.filter((sql) => READS_RECORD_REFERENCES.test(sql))).toEqual([]);
  });

  it("reads the project's few followed references, not the record, when none of them is the record's", async () => {
    const project = 'ev-ref-others';
    await writeRecord(db, project, 'p1', RECORD, () => []);
    // Another patient's five Observations each name four of 20 Practitioners.
    await writeRecord(db, project, 'p2', 5, (i) => [0, 1, 2, 3].map((k) => ['Practitioner', `pr${(i - 1) * 4 + k}`]));
    const big = await walk(project, 'p1', 100);
    expect(included(big)).toEqual([]);
    expect(big.sent.filter((sql) => READS_RECORD_REFERENCES.test(sql))).toEqual([]);
    // The small record, whose compartment is smaller than the project's followed references, is read from its own rows.
    const small = await walk(project, 'p2', 7);
    expect(included(small)).toEqual(Array.from({ length: 20 }, (_, i) => `Practitioner/pr${i}`).sort());
    expect(small.sent.some((sql) => READS_RECORD_REFERENCES.test(sql))).toBe(true);
  });

  it('walks the resources a large record references in (type, id) order from their references, each once, pages counting them', async () => {
    const project = 'ev-ref-walk';
    // Observation i names Practitioner pr<i % 150> for i <= 150 (twice each for i <= 75, by its
    // performer and by a second row), and Organization org<i % 7> for i <= 20.
    await writeRecord(db, project, 'p1', RECORD, (i) => [
      ...(i <= 150 ? [['Practitioner', `pr${i % 150}`] as const] : []),
      ...(i <= 75 ? [['Practitioner', `pr${(i + 75) % 150}`] as const] : []),
      ...(i <= 20 ? [['Organization', `org${i % 7}`] as const] : []),
    ]);
    // Resources of the same types that only another patient's record references, in between in the order.
    await writeRecord(db, project, 'p2', 3, (i) => [['Practitioner', `pr${i}x`], ['Organization', `org${i}x`]]);
    const expected = [...Array.from({ length: 7 }, (_, i) => `Organization/org${i}`), ...Array.from({ length: 150 }, (_, i) => `Practitioner/pr${i}`)].sort();
    const answer = await walk(project, 'p1', 40);
    expect(included(answer)).toEqual(expected);
    expect(answer.pages.slice(0, -1).every((page) => page.length === 40)).toBe(true);
    expect(answer.pages.flat()).toHaveLength(RECORD + 1 + expected.length);
    expect(answer.sent.filter((sql) => READS_RECORD_REFERENCES.test(sql))).toEqual([]);
    // `_type` narrows what is listed, not what is followed.
    const organizations = await walk(project, 'p1', 3, { types: ['Organization'] });
    expect(included(organizations)).toEqual(expected.filter((key) => key.startsWith('Organization/')));
    expect(organizations.pages.slice(0, -1).every((page) => page.length === 3)).toBe(true);
  });

  it('counts once per walk: later pages of the referenced part are read from the side its first page was', async () => {
    const project = 'ev-ref-carried';
    await writeRecord(db, project, 'p1', RECORD, (i) => (i <= 120 ? [['Practitioner', `pr${i}`]] : []));
    const answer = await walk(project, 'p1', 40);
    expect(included(answer)).toEqual(Array.from({ length: 120 }, (_, i) => `Practitioner/pr${i + 1}`).sort());
    // The referenced part begins on page 8 (entries 281-320) and runs over four pages.
    expect(answer.pages.map((page) => page.some((entry) => entry.startsWith('include '))).indexOf(true)).toBe(7);
    expect(answer.counted).toEqual([7]);
    expect(answer.sent.filter((sql) => READS_RECORD_REFERENCES.test(sql))).toEqual([]);
  });

  it('reads later pages of a small record from its own rows without counting again', async () => {
    const project = 'ev-ref-small-carried';
    await writeRecord(db, project, 'p1', 12, (i) => [['Practitioner', `pr${i}`]]);
    await writeRecord(db, project, 'p2', 400, (i) => [['Practitioner', `pr${i % 50}`]]);
    const answer = await walk(project, 'p1', 5);
    expect(included(answer)).toEqual(Array.from({ length: 12 }, (_, i) => `Practitioner/pr${i + 1}`).sort());
    // Entries 14-25 are referenced: pages 3 to 5.
    expect(answer.counted).toEqual([2]);
    expect(answer.sent.filter((sql) => READS_RECORD_REFERENCES.test(sql))).toHaveLength(3);
  });

  it('lists each referenced resource once when references are written between the pages of a walk', async () => {
    const project = 'ev-ref-changed';
    await writeRecord(db, project, 'p1', RECORD, (i) => (i <= 60 ? [['Practitioner', `pr${i}`]] : []));
    // After the first referenced page (read from the few followed rows), another record adds 2,000 references to follow.
    const answer = await walk(project, 'p1', 40, {}, async (pages) => {
      if (pages === 8) await writeRecord(db, project, 'p2', 1000, (i) => [['Practitioner', `pr${i % 90}`], ['Practitioner', `pr${(i + 45) % 90}x`]]);
    });
    expect(included(answer)).toEqual(Array.from({ length: 60 }, (_, i) => `Practitioner/pr${i + 1}`).sort());
  });

  it("counts only the followed rows: a project's account rows (`_compartment` to an Organization) do not send the record to its own rows", async () => {
    const project = 'ev-ref-accounts';
    // Every Observation of both records is in the account org-acct; p1's also name 50 Practitioners.
    await writeRecord(db, project, 'p1', RECORD, (i) => [['Practitioner', `pr${i % 50}`], ['Organization', 'org-acct', '_compartment']]);
    await writeRecord(db, project, 'p2', 400, () => [['Organization', 'org-acct', '_compartment']]);
    const answer = await walk(project, 'p1', 100);
    expect(included(answer)).toEqual(Array.from({ length: 50 }, (_, i) => `Practitioner/pr${i}`).sort());
    expect(answer.sent.filter((sql) => READS_RECORD_REFERENCES.test(sql))).toEqual([]);
  });

  it('reads a small record from its own rows when the project holds many references to follow', async () => {
    const project = 'ev-ref-small';
    await writeRecord(db, project, 'p1', 5, (i) => [['Practitioner', `pr${i}`]]);
    await writeRecord(db, project, 'p2', 400, (i) => [['Practitioner', `pr${i % 50}`]]);
    const answer = await walk(project, 'p1', 4);
    expect(included(answer)).toEqual(['Practitioner/pr1', 'Practitioner/pr2', 'Practitioner/pr3', 'Practitioner/pr4', 'Practitioner/pr5']);
    expect(answer.sent.some((sql) => READS_RECORD_REFERENCES.test(sql))).toBe(true);
  });
});

/**
 * Patient `patientId` of `projectId` and its `observations` Observations (`<patientId>-o<i>`), as
 * the store writes their rows (resource, `subject` and `_compartment` reference rows), each naming
 * the targets `targets(i)` gives by `performer` rows (or the code given: `_compartment` for an account); the targets are written as resources too
 * (once: a target already written is kept). Every id is written after `<projectId>.`, as ids are
 * unique by type across projects.
 */
async function writeRecord(
  db: Database,
  projectId: string,
  patient: string,
  observations: number,
  targets: (i: number) => readonly (readonly [type: string, id: string, code?: string])[],
): Promise<void> {
  const patientId = `${projectId}.${patient}`;
  const ids = Array.from({ length: observations }, (_, i) => `${patientId}-o${i + 1}`);
  const rows: Reference[] = [['Patient', patientId, '_compartment', 'Patient', patientId]];
  const named = new Map<string, readonly [string, string]>();
  ids.forEach((id, i) => {
    rows.push(['Observation', id, 'subject', 'Patient', patientId], ['Observation', id, '_compartment', 'Patient', patientId]);
    for (const target of targets(i + 1)) {
      const [type, targetId] = [target[0], `${projectId}.${target[1]}`];
      rows.push(['Observation', id, target[2] ?? 'performer', type, targetId]);
      named.set(`${type}/${targetId}`, [type, targetId]);
    }
  });
  const resources: (readonly [string, string])[] = [['Patient', patientId], ...ids.map((id) => ['Observation', id] as const), ...named.values()];
  await db.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT t, i, $1, gen_random_uuid(), now(), false, json_build_object('resourceType', t, 'id', i)
     FROM unnest($2::text[], $3::text[]) v(t, i) ON CONFLICT DO NOTHING`,
    [projectId, resources.map(([type]) => type), resources.map(([, id]) => id)],
  );
  const column = (n: number) => rows.map((row) => row[n]);
  await db.query(
    `INSERT INTO reference_index ("projectId", "resourceType", "resourceId", seq, code, "targetType", "targetId", url)
     SELECT $1, t, i, row_number() OVER (PARTITION BY t, i), c, tt, ti, NULL FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) v(t, i, c, tt, ti)`,
    [projectId, column(0), column(1), column(2), column(3), column(4)],
  );
}
