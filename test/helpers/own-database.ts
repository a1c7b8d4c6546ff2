import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { useTestServer, type TestServer } from './server.js';

/**
 * A PostgreSQL database of its own on the server of DATABASE_URL, for tests whose counts or locks
 * must not meet other tests' servers (which share DATABASE_URL's database).
 */
export interface OwnDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/** Runs one statement on the server of DATABASE_URL, on a connection of its own. */
export async function adminStatement(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Creates a database named `<prefix>_<random>` beside DATABASE_URL's: a copy of the run's migrated
 * template (test/helpers/global-setup.ts) when there is one, else empty.
 */
export async function createOwnDatabase(prefix: string): Promise<OwnDatabase> {
  const name = `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const template = migratedTemplate();
  await adminStatement(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => adminStatement(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** The migrated template of this run, if any (none outside vitest). */
function migratedTemplate(): string | undefined {
  try {
    return inject('postgresTemplate');
  } catch {
    return undefined;
  }
}

/**
 * useTestServer for a file whose subscription worker settings (retry base, attempts at a time, a
 * held worker) must govern its own deliveries. On PostgreSQL every test server shares one
 * database, so any of them claims any due outbox row with its own settings, and a WebSocket event
 * matched by a server of another cache namespace never reaches this file's sockets: such a file
 * gets a database of its own there.
 */
export async function useOwnOutboxServer(overrides: Record<string, string>): Promise<TestServer> {
  if (!process.env.DATABASE_URL) return useTestServer(overrides);
  const own = await createOwnDatabase('flint_outbox');
  // Registered first, so it runs after useTestServer's own afterAll has closed the server.
  afterAll(() => own.drop());
  return useTestServer({ ...overrides, DATABASE_URL: own.url });
}
