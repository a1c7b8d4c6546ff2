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
const PROJECT = 'generic-plans';

/**
 * On PostgreSQL the searches driven by a key are planned once per connection, and the plan is kept
 * for the connection's life. A new server's first searches plan them on empty, never analyzed
 * tables: each generic plan made then must already start from an index, so that it holds however
 * large the tables grow before statistics are refreshed. The connection here has the settings of
 * the server's plan-once pool; every statement the search service marks planOnce is explained as
 * that pool would plan it.
 */
describe.skipIf(!serverUrl)('generic plans made on an empty database', () => {
  let own: OwnDatabase;
  let client: pg.Client;
  let prepared = 0;

  beforeAll(async () => {
    own = await createOwnDatabase('flint_generic_plans');
    const db = await Database.open(loadConfig(testEnv({ DATABASE_URL: own.url })));
    await migrate(db);
    await db.close();
    client = new pg.Client({ connectionString: own.url, options: planSettings('force_generic_plan').join(' ') });
    await client.connect();
  }, 60_000);

  afterAll(async () => {
    await client?.end();
    await own?.drop();
  });

  /** The generic plans of the statements a search marks planOnce (as `identity`: a member without a policy by default). */
  async function genericPlansOf(resourceType: string, query: string, identity: Identity = { projectId: PROJECT, superAdmin: false }): Promise<string[]> {
    const plans: string[] = [];
    const executor: SqlExecutor = {
      query: async <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
        if (!options?.planOnce) return (await client.query(sql, [...args])).rows as R[];
        const name = `s${++prepared}`;
        const result = await client.query({ name, text: sql, values: [...args] });
        const explained = await client.query(`EXPLAIN (COSTS OFF) EXECUTE ${name}(${args.map(literal).join(', ')})`);
        plans.push(explained.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n'));
        return result.rows as R[];
      },
      execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rowCount ?? 0,
    };
    const config = { ...loadConfig(testEnv({ DATABASE_URL: own.url })), fhirBaseUrl: 'http://flint.test/fhir/R4' };
    await search(searchServicesFor({ database: executor, identity, config }), resourceType, [
      ...new URLSearchParams(query).entries(),
    ]);
    return plans;
  }

  it('a search by identifier reads the token index through its index', async () => {
    const plans = await genericPlansOf('Patient', 'identifier=http://hospital.example.org/mrn|MRN1');
    expect(plans.length).toBeGreaterThan(0);
    expect(plans.join('\n')).not.toContain('Seq Scan');
  });

  it('a search by subject and code reads both index tables through their indexes', async () => {
    const plans = await genericPlansOf('Observation', 'subject=Patient/p1&code=http://loinc.org|8867-4');
    expect(plans.length).toBeGreaterThan(0);
    expect(plans.join('\n')).not.toContain('Seq Scan');
  });

  it('a search by name prefix reads each resource of its window by primary key', async () => {
    const plan = (await genericPlansOf('Patient', 'name=smi')).join('\n');
    expect(plan).toMatch(/on resource r\s+Index Cond: \(\("resourceType" = \$\d+\) AND \(id = w\."resourceId"\)\)/);
    expect(plan).not.toContain('Join Filter');
    expect(plan).not.toContain('Seq Scan');
  });

  it('a chain ending in an identifier starts from the identifier, then the references to it', async () => {
    const plan = (await genericPlansOf('Observation', 'subject:Patient.identifier=http://hospital.example.org/mrn|MRN1')).join('\n');
    expect(plan).toMatch(/Index Only Scan using "token_index_projectId_resourceType_code_value_system_idx" on token_index x1/);
    expect(plan).toMatch(/Index Cond: \(\("projectId" = \$\d+\) AND \("targetType" = \$\d+\) AND \("targetId" = x1\."resourceId"\)\)/);
    expect(plan).not.toContain('Join Filter');
    expect(plan).not.toContain('Seq Scan');
  });

  it('a search by ids and a common code probes the code among each id\'s own index rows, then reads the resources by primary key', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `o${i}`).join(',');
    const plan = (await genericPlansOf('Observation', `status=final&_id=${ids}`)).join('\n');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0\s+Index Cond: \(\("resourceType" = \$\d+\) AND \("resourceId" = v\.v\)\)/);
    expect(plan).toMatch(/on resource r\s+Index Cond: \(\("resourceType" = \$\d+\) AND \(id = ANY/);
    expect(plan).not.toContain('Seq Scan');
  });

  it('a search by ids and a token without a system reads no value index rows of other resources', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `p${i}`).join(',');
    const plan = (await genericPlansOf('Patient', `gender=female&_id=${ids}`)).join('\n');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0\s+Index Cond: \(\("resourceType" = \$\d+\) AND \("resourceId" = v\.v\)\)/);
    expect(plan).not.toContain('token_index_projectId_resourceType_code_value_system_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  it('a search by ids of a member whose AccessPolicy narrows the type by a token probes each resource\'s own index rows', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `m${i}`).join(',');
    const member: Identity = {
      projectId: PROJECT,
      superAdmin: false,
      accessPolicy: { policyId: 'final-only', resources: [{ resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' }] },
    };
    const plan = (await genericPlansOf('Observation', `_id=${ids}`, member)).join('\n');
    expect(plan).toMatch(/Index Scan using token_index_pkey on token_index x0\s+Index Cond: \(\("resourceType" = r\."resourceType"\) AND \("resourceId" = r\.id\)\)/);
    expect(plan).not.toContain('token_index_projectId_resourceType_code_value_system_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  it('a search by ids sorted by a date reads each resource\'s own date rows by primary key', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `d${i}`).join(',');
    const plan = (await genericPlansOf('Observation', `_id=${ids}&_sort=-date`)).join('\n');
    expect(plan).toMatch(/Index Scan using date_index_pkey on date_index o\s+Index Cond: \(\("resourceType" = r\."resourceType"\) AND \("resourceId" = r\.id\)\)/);
    expect(plan).not.toContain('date_index_sort_high_idx');
    expect(plan).not.toContain('Seq Scan');
  });

  // Last: it writes rows, which the tests above must not see.
  it('a page sorted by _lastUpdated, planned once 20,000 resources arrived, reads its index in order', async () => {
    await client.query(
      `INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
       SELECT 'Observation', 'o' || g, $1, gen_random_uuid(), now() - g * interval '1 second', false, ('{"resourceType":"Observation","note":"' || repeat('a', 600) || '"}')::json
       FROM generate_series(1, 20000) g`,
      [PROJECT],
    );
    const plan = (await genericPlansOf('Observation', '_sort=-_lastUpdated&_count=20')).join('\n');
    expect(plan).toMatch(/Index Scan Backward using "resource_projectId_resourceType_lastUpdated_id_idx" on resource r/);
    expect(plan).not.toMatch(/Sort|Bitmap/);
  });
});

/** A bind value as an SQL literal, for EXPLAIN EXECUTE (which takes no bind parameters). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(', ')}]`;
  if (value instanceof Date) return `'${value.toISOString()}'`;
  return `'${String(value).replace(/'/g, "''")}'`;
}
