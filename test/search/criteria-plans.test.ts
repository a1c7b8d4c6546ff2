import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database, planSettings, type QueryOptions, type SqlExecutor } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { Identity } from '../../src/identity/identity.js';
import { search, searchServicesFor } from '../../src/search/service.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { testEnv } from '../helpers/server.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'criteria-plans';
const OBSERVATIONS = 20000;

/** A member whose AccessPolicy narrows Observation by a broad value, as policies do. */
const member: Identity = {
  projectId: PROJECT,
  superAdmin: false,
  accessPolicy: { policyId: 'final-only', resources: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' }] },
};

/** The value index of token rows, whose resourceId comes after value and system. */
const TOKEN_VALUE_INDEX = 'token_index_projectId_resourceType_code_value_system_idx';

/**
 * The plans of a member's searches whose AccessPolicy criteria narrow the type, on PostgreSQL
 * tables written since their last ANALYZE (never analyzed here): every statement explained as the
 * server plans it (planOnce ones generic on the plan-once pool's settings, the others for their
 * values). The criteria must be probed per resource through the token table's primary key: through
 * the value index each resource read every `status=final` row up to its own.
 */
describe.skipIf(!serverUrl)('plans of searches narrowed by AccessPolicy criteria, on data never analyzed', () => {
  let own: OwnDatabase;
  let custom: pg.Client;
  let generic: pg.Client;
  let prepared = 0;

  beforeAll(async () => {
    own = await createOwnDatabase('flint_criteria_plans');
    const db = await Database.open(loadConfig(testEnv({ DATABASE_URL: own.url })));
    await migrate(db);
    await db.close();
    custom = new pg.Client({ connectionString: own.url, options: planSettings('force_custom_plan').join(' ') });
    generic = new pg.Client({ connectionString: own.url, options: planSettings('force_generic_plan').join(' ') });
    await custom.connect();
    await generic.connect();
    await writeObservations(custom);
  }, 60_000);

  afterAll(async () => {
    await custom?.end();
    await generic?.end();
    await own?.drop();
  });

  /** The plans of every statement a search sends (as `identity`), explained after it ran. */
  async function plansOf(resourceType: string, query: string, identity: Identity = member): Promise<{ sql: string; plan: string }[]> {
    const plans: { sql: string; plan: string }[] = [];
    const executor: SqlExecutor = {
      query: async <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
        const client = options?.planOnce ? generic : custom;
        const name = `s${++prepared}`;
        const result = await client.query({ name, text: sql, values: [...args] });
        if (!sql.startsWith('EXPLAIN')) {
          const explained = await client.query(`EXPLAIN (COSTS OFF) EXECUTE ${name}(${args.map(literal).join(', ')})`);
          plans.push({ sql, plan: explained.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n') });
        }
        return result.rows as R[];
      },
      execute: async (sql: string, args: readonly unknown[] = []) => (await custom.query(sql, [...args])).rowCount ?? 0,
    };
    const config = { ...loadConfig(testEnv({ DATABASE_URL: own.url })), fhirBaseUrl: 'http://flint.test/fhir/R4' };
    await search(searchServicesFor({ database: executor, identity, config }), resourceType, [...new URLSearchParams(query).entries()]);
    return plans;
  }

  /** The plans of the statements that read the searched type's resources or their index rows (not the project's SearchParameters). */
  async function searchPlans(query: string): Promise<string> {
    const plans = await plansOf('Observation', query);
    return plans
      .filter(({ sql }) => !sql.includes(`'SearchParameter'`))
      .map(({ plan }) => plan)
      .join('\n');
  }

  it('a page in _lastUpdated order probes the criteria per resource by primary key', async () => {
    const plan = await searchPlans('_sort=-_lastUpdated&_count=20');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0\s+Index Cond: \(\("resourceType" = r\."resourceType"\) AND \("resourceId" = r\.id\)\)/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
  });

  it('an unsorted page probes the criteria per resource instead of reading every matching row', async () => {
    const plan = await searchPlans('_count=20');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
  });

  it('a date range page probes the criteria per resource of the range', async () => {
    const plan = await searchPlans('date=ge2023-03-01&date=le2023-03-31');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0/);
    expect(plan).not.toContain(TOKEN_VALUE_INDEX);
  });

  it('an exact count reads the index tables, not the resources', async () => {
    const plans = await plansOf('Observation', 'code=http://loinc.org|8867-4&_count=1&_total=accurate');
    const count = plans.find(({ sql }) => sql.includes('::int AS n'));
    expect(count).toBeDefined();
    expect(count!.plan).not.toMatch(/on resource r\b/);
  });
});

/** Observations of PROJECT, each with its status, code and date index rows, as the store writes them. */
async function writeObservations(client: pg.Client): Promise<void> {
  await client.query(
    `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT 'Observation', 'o' || g, $1, gen_random_uuid(), timestamptz '2025-01-01' + g * interval '1 second', false,
            json_build_object('resourceType', 'Observation', 'id', 'o' || g, 'status', 'final')
     FROM generate_series(1, $2::int) g`,
    [PROJECT, OBSERVATIONS],
  );
  await client.query(
    `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, system, value, text)
     SELECT $1, 'Observation', 'o' || g, s.seq, s.code, s.system, s.value, NULL FROM generate_series(1, $2::int) g,
       LATERAL (VALUES (1, 'status', NULL, 'final'), (2, 'code', 'http://loinc.org', CASE WHEN g % 20 = 0 THEN '8867-4' ELSE '2339-0' END))
         AS s(seq, code, system, value)`,
    [PROJECT, OBSERVATIONS],
  );
  await client.query(
    `INSERT INTO date_index ("projectId", "resourceType", "resourceId", seq, code, start, "end")
     SELECT $1, 'Observation', 'o' || g, 1, 'date', d, d + interval '999 milliseconds'
     FROM generate_series(1, $2::int) g, LATERAL (SELECT timestamptz '2023-01-01' + g * interval '1 hour' AS d) t`,
    [PROJECT, OBSERVATIONS],
  );
}

/** A bind value as an SQL literal, for EXPLAIN EXECUTE (which takes no bind parameters). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(', ')}]`;
  if (value instanceof Date) return `'${value.toISOString()}'`;
  return `'${String(value).replace(/'/g, "''")}'`;
}
