import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { PGlite } from '@electric-sql/pglite';
import type { SqlExecutor, TransactionKind } from './database.js';

const MIGRATIONS_DIR = new URL('../../prisma/migrations/', import.meta.url).pathname;
/** Arbitrary constant naming Flint's migration lock among PostgreSQL advisory locks. */
const MIGRATION_LOCK_KEY = 7_346_011;

/** What migrations run on: the server's Database, or an embedded database opened directly (pgliteMigrationTarget). */
export interface MigrationTarget {
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>, kind?: TransactionKind): Promise<T>;
}

/**
 * Applies every migration under prisma/migrations not yet recorded, in name order, in one
 * transaction holding an advisory lock, so two servers starting together apply each exactly once.
 * Hand-written SQL: it runs before the tables of the Prisma models exist, and its bookkeeping
 * table (_flint_migrations) is not a Prisma model.
 */
export async function migrate(db: MigrationTarget, log?: Logger): Promise<string[]> {
  const names = (await readdir(MIGRATIONS_DIR, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return db.transaction(async (tx) => {
    await tx.execute(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await tx.execute(
      'CREATE TABLE IF NOT EXISTS "_flint_migrations" (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
    );
    const applied = new Set(
      (await tx.query<{ name: string }>('SELECT name FROM "_flint_migrations"')).map((row) => row.name),
    );
    const pending = names.filter((name) => !applied.has(name));
    for (const name of pending) {
      const script = await readFile(join(MIGRATIONS_DIR, name, 'migration.sql'), 'utf8');
      for (const statement of splitStatements(script)) await tx.execute(statement);
      await tx.execute('INSERT INTO "_flint_migrations" (name) VALUES ($1)', [name]);
      log?.info({ migration: name }, 'applied migration');
    }
    return pending;
  }, 'schema');
}

/** Splits a migration script on semicolons that end a line; our migrations hold no functions. */
export function splitStatements(script: string): string[] {
  return script
    .split(/;\s*$/m)
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter((statement) => statement.length > 0);
}

/**
 * An embedded database opened in this thread (not through Database and its worker), as migrate()
 * needs it: to build the migrated data folder the tests start their servers from (test/helpers).
 */
export function pgliteMigrationTarget(pglite: PGlite): MigrationTarget {
  return {
    transaction: (work) =>
      pglite.transaction((tx) =>
        work({
          query: async <R>(sql: string, args: readonly unknown[] = []) => (await tx.query<R>(sql, [...args])).rows,
          execute: async (sql: string, args: readonly unknown[] = []) => (await tx.query(sql, [...args])).affectedRows ?? 0,
        }),
      ),
  };
}
