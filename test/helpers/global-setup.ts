import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate, pgliteMigrationTarget, type MigrationTarget } from '../../src/db/migrate.js';
import { dumpPGlite, openPGlite } from '../../src/db/pglite.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * A dump of an embedded database with every migration applied, built once per run: testEnv()
     * starts each server on a copy of it (`DATA_DIR=memory://<dump>`) instead of migrating an empty
     * one. Unset on PostgreSQL (DATABASE_URL), or when it could not be built.
     */
    pgliteTemplate: string | undefined;
    /**
     * A database beside DATABASE_URL's with every migration applied, built once per run: a test's
     * database of its own (createOwnDatabase) is a copy of it (`CREATE DATABASE … TEMPLATE`)
     * instead of an empty one each file migrates. Unset on the embedded database, or when it could
     * not be built.
     */
    postgresTemplate: string | undefined;
  }
}

/** One build per run: vitest calls this once per project (and for the root project) in one process. */
const BUILD = Symbol.for('flint.test.pgliteTemplate');
type Build = { dir?: string; dump?: Promise<string | undefined>; template?: Promise<string | undefined> };
const state = globalThis as { [BUILD]?: Build };

/** vitest globalSetup (vitest.config.ts): builds the migrated dump, removes it after the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const serverUrl = process.env.DATABASE_URL;
  if (!state[BUILD] && !serverUrl) {
    const dir = await mkdtemp(join(tmpdir(), 'flint-test-pglite-'));
    state[BUILD] = { dir, dump: buildTemplate(join(dir, 'migrated.tar')) };
  } else if (!state[BUILD] && serverUrl) {
    state[BUILD] = { template: buildPostgresTemplate(serverUrl) };
  }
  const build = state[BUILD];
  project.provide('pgliteTemplate', await build?.dump);
  project.provide('postgresTemplate', await build?.template);
  return async () => {
    if (state[BUILD] !== build || !build) return;
    state[BUILD] = undefined;
    if (build.dir) await rm(build.dir, { recursive: true, force: true });
    const template = await build.template;
    if (template && serverUrl) await onServer(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`));
  };
}

/** Creates and migrates a database beside `serverUrl`'s; undefined (each own database migrates) when that fails. */
async function buildPostgresTemplate(serverUrl: string): Promise<string | undefined> {
  const name = `flint_test_migrated_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  try {
    await onServer(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    await onServer(url.toString(), (client) => migrate(clientMigrationTarget(client)));
    return name;
  } catch (error) {
    console.warn(`Test databases migrate themselves: the migrated template could not be built (${String(error)})`);
    await onServer(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name}`)).catch(() => undefined);
    return undefined;
  }
}

/** Runs `work` on a connection of its own to `url`. */
async function onServer<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A pg connection as migrate() needs it: one transaction at a time. */
function clientMigrationTarget(client: pg.Client): MigrationTarget {
  return {
    transaction: async (work) => {
      await client.query('BEGIN');
      try {
        const result = await work({
          query: async <R>(sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rows as R[],
          execute: async (sql: string, args: readonly unknown[] = []) => (await client.query(sql, [...args])).rowCount ?? 0,
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    },
  };
}

/** Migrates an empty in-memory database and dumps it; undefined (each server migrates) when that fails. */
async function buildTemplate(file: string): Promise<string | undefined> {
  try {
    const pglite = await openPGlite('memory://');
    try {
      await migrate(pgliteMigrationTarget(pglite));
      await dumpPGlite(pglite, file);
    } finally {
      await pglite.close();
    }
    return file;
  } catch (error) {
    console.warn(`Test servers migrate their own databases: the migrated template could not be built (${String(error)})`);
    return undefined;
  }
}
