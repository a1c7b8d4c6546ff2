import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, pgliteMigrationTarget } from '../../src/db/migrate.js';
import { loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { openPGlite } from '../../src/db/pglite.js';
import { SELECT_CURRENT_MANY, selectVersionTextsSql } from '../../src/storage/current-versions.js';
import { createOwnDatabase, type OwnDatabase } from '../helpers/own-database.js';
import { testEnv } from '../helpers/server.js';

/**
 * The store's reads by several keys are planned once per connection (a generic plan, kept for the
 * connection's life). Planned on a freshly migrated, empty and never analyzed database, as a new
 * server's first reads are, each must still probe the primary key, so that it stays an index
 * lookup however large the tables grow before anyone runs ANALYZE.
 */
interface Explainer {
  genericPlan(name: string, types: string, sql: string, args: string): Promise<string>;
  close(): Promise<void>;
}

async function embeddedExplainer(): Promise<Explainer> {
  const pglite = await openPGlite('memory://');
  await migrate(pgliteMigrationTarget(pglite));
  await pglite.exec('SET plan_cache_mode = force_generic_plan');
  return {
    async genericPlan(name, types, sql, args) {
      await pglite.exec(`PREPARE ${name}(${types}) AS ${sql}`);
      const result = await pglite.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${name}(${args})`);
      return result.rows.map((row) => row['QUERY PLAN']).join('\n');
    },
    close: () => pglite.close(),
  };
}

async function postgresExplainer(): Promise<Explainer> {
  const own: OwnDatabase = await createOwnDatabase('flint_plans');
  const db = await Database.open(loadConfig(testEnv({ DATABASE_URL: own.url })));
  await migrate(db);
  await db.close();
  const client = new pg.Client({ connectionString: own.url });
  await client.connect();
  await client.query('SET plan_cache_mode = force_generic_plan');
  return {
    async genericPlan(name, types, sql, args) {
      await client.query(`PREPARE ${name}(${types}) AS ${sql}`);
      const result = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE ${name}(${args})`);
      return result.rows.map((row) => row['QUERY PLAN']).join('\n');
    },
    async close() {
      await client.end();
      await own.drop();
    },
  };
}

describe('reads by several keys, planned before any statistics exist', () => {
  let explainer: Explainer;

  beforeAll(async () => {
    explainer = process.env.DATABASE_URL ? await postgresExplainer() : await embeddedExplainer();
  }, 120_000);

  afterAll(async () => {
    await explainer?.close();
  });

  it('current versions by (type, id) probe the resource primary key', async () => {
    const keys = `'[["Patient","a",null],["Observation","b","00000000-0000-0000-0000-000000000000"]]'`;
    const plan = await explainer.genericPlan('current_many', 'json', SELECT_CURRENT_MANY, keys);
    expect(plan).toContain('Index Scan using resource_pkey');
    expect(plan).not.toMatch(/Seq Scan on resource\b/);
  });

  it('history versions by versionId probe the history primary key', async () => {
    const sql = selectVersionTextsSql('x."projectId" = $2');
    const plan = await explainer.genericPlan('version_texts', 'json, text', sql, `'["00000000-0000-0000-0000-000000000000"]', 'p'`);
    expect(plan).toContain('Index Scan using resource_history_pkey');
    expect(plan).not.toMatch(/Seq Scan on resource_history/);
  });
});
