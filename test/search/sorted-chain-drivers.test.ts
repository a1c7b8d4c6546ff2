import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database, type QueryOptions, type SqlExecutor } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { Identity } from '../../src/identity/identity.js';
import { search, searchServicesFor } from '../../src/search/service.js';
import { writeObservations, writeSubjects } from '../helpers/plan-database.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { testEnv } from '../helpers/server.js';

const PROJECT = 'sorted-chain-drivers';
const OTHER_PROJECT = 'sorted-chain-drivers-other';
// More references to the named patients than a sorted page sorts (51,200).
const OBSERVATIONS = 52000;
const PATIENTS = 2000;

const superAdmin: Identity = { projectId: PROJECT, superAdmin: true };
const member: Identity = { projectId: PROJECT, superAdmin: false };

/** A statement a search sent, and its arguments. */
interface Sent {
  sql: string;
  args: readonly unknown[];
}

/**
 * Sorted pages of a chain to targets that every patient is (`smith` names all 2,000, whose 52,000
 * references are more than a sorted page sorts) with a filter that one Observation in 2,000 meets
 * (`value-quantity=99.9`): the walk of the newest 6,400 date rows finds 3 matches, short of a page
 * of 5. The quantity's 26 rows drive the page, the chain probed on each, where the general
 * statement ran past 30 s on PostgreSQL without statistics (it started from the chain's references).
 * On the database the tests run on (PGlite, or PostgreSQL never analyzed).
 */
describe('sorted pages of a chain to common targets driven by a rarer filter', () => {
  let own: OwnDatabase | undefined;
  let db: Database;

  beforeAll(async () => {
    own = process.env.DATABASE_URL ? await createOwnDatabase('flint_sorted_chain_drivers') : undefined;
    db = await Database.open(loadConfig(testEnv(own ? { DATABASE_URL: own.url } : {})));
    await migrate(db);
    // The pages read the date rows, the quantity rows and the resources' lastUpdated order: no token rows.
    await writeObservations(db, PROJECT, OBSERVATIONS, '', { rows: ['date'] });
    await writeObservations(db, OTHER_PROJECT, OBSERVATIONS / 10, 'x-', { rows: ['date'] });
    await writeSubjects(db, PROJECT, OBSERVATIONS, PATIENTS, '');
    await writeSubjects(db, OTHER_PROJECT, OBSERVATIONS / 10, PATIENTS, 'x-');
    for (const [projectId, prefix, count] of [[PROJECT, '', OBSERVATIONS], [OTHER_PROJECT, 'x-', OBSERVATIONS / 10]] as const) {
      await db.query(
        `INSERT INTO quantity_index ("projectId", "resourceType", "resourceId", seq, code, value, system, unit)
         SELECT $1, 'Observation', $2 || 'o' || g, 1, 'value-quantity', 99.9, 'http://unitsofmeasure.org', 'kg' FROM generate_series(7, $3::int, 2000) g`,
        [projectId, prefix, count],
      );
    }
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    await own?.drop();
  });

  /** The search (as `identity`): the statements it sent and its matches' ids. */
  async function searched(identity: Identity, query: string): Promise<{ sent: Sent[]; ids: string[] }> {
    const sent: Sent[] = [];
    const database: SqlExecutor = {
      query: <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
        sent.push({ sql, args });
        return db.query<R>(sql, args, options);
      },
      execute: (sql: string, args: readonly unknown[] = [], options?: QueryOptions) => db.execute(sql, args, options),
    };
    const config = { ...loadConfig(testEnv()), fhirBaseUrl: 'http://flint.test/fhir/R4' };
    const result = await search(searchServicesFor({ database, identity, config }), 'Observation', [...new URLSearchParams(query).entries()]);
    return { sent, ids: result.matches.map(({ id }) => id) };
  }

  /** The general statement over one project's resources (pages/general.ts pageRows), or over every project's (`p.id`). */
  const general = ({ sql }: Sent) => /^SELECT [^(]* FROM resource r WHERE /.test(sql) || sql.includes('FROM resource r WHERE r."projectId" = p.id');
  const overProject = (project: string) => ({ args }: Sent) => args.some((arg) => Array.isArray(arg) && arg.includes(project));

  it('a page sorted by -date of one project is read from the quantity rows, newest first', async () => {
    const { sent, ids } = await searched(member, `subject:Patient.name=smith&value-quantity=99.9&_project=${PROJECT}&_sort=-date&_count=5`);
    // An Observation's date grows with its number.
    expect(ids).toEqual(['o50007', 'o48007', 'o46007', 'o44007', 'o42007']);
    expect(sent.filter(general)).toEqual([]);
  });

  it('a page sorted by -date sorts the quantity rows on their date rows before reading any Observation', async () => {
    const { sent, ids } = await searched(member, `subject:Patient.name=smith&value-quantity=99.9&_project=${PROJECT}&_sort=-date&_count=5`);
    expect(ids).toEqual(['o50007', 'o48007', 'o46007', 'o44007', 'o42007']);
    // candidatesSortedPage: the candidates' sort values first, then the page's resources by primary key.
    const sortedCandidates = ({ sql }: Sent) => /^SELECT .* FROM \(SELECT d\.id, .* ORDER BY k0 DESC NULLS LAST, k1 ASC\) p CROSS JOIN LATERAL \(SELECT \* FROM resource r /.test(sql);
    expect(sent.filter(sortedCandidates)).toHaveLength(1);
  });

  it('a page sorted by date past an offset keeps the order', async () => {
    const { sent, ids } = await searched(member, `subject:Patient.name=smith&value-quantity=99.9&_project=${PROJECT}&_sort=date&_offset=2&_count=3`);
    expect(ids).toEqual(['o4007', 'o6007', 'o8007']);
    expect(sent.filter(general)).toEqual([]);
  });

  it('a page sorted by -_lastUpdated walks the resources in that order and probes the chain on each', async () => {
    const { sent, ids } = await searched(member, `subject:Patient.name=smith&_project=${PROJECT}&_sort=-_lastUpdated&_count=5`);
    // An Observation's lastUpdated grows with its number too.
    expect(ids).toEqual(['o52000', 'o51999', 'o51998', 'o51997', 'o51996']);
    expect(sent.filter(general)).toEqual([]);
  });

  it('a page sorted by -_lastUpdated whose walk falls short is read from the quantity rows', async () => {
    const { sent, ids } = await searched(member, `subject:Patient.name=smith&value-quantity=99.9&_project=${PROJECT}&_sort=-_lastUpdated&_count=5`);
    expect(ids).toEqual(['o50007', 'o48007', 'o46007', 'o44007', 'o42007']);
    expect(sent.filter(general)).toEqual([]);
  });

  it("a super admin's page of every project reads the large project from its quantity rows, merged with the other's", async () => {
    const { sent, ids } = await searched(superAdmin, 'subject:Patient.name=smith&value-quantity=99.9&_sort=date&_count=5');
    // Both projects' Observations of one number share its date: ties by id.
    expect(ids).toEqual(['o7', 'x-o7', 'o2007', 'x-o2007', 'o4007']);
    expect(sent.filter(general).filter(overProject(PROJECT))).toEqual([]);
  });
});
