import { randomUUID } from 'node:crypto';
import pg from 'pg';

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

/** Creates a database named `<prefix>_<random>` beside DATABASE_URL's. */
export async function createOwnDatabase(prefix: string): Promise<OwnDatabase> {
  const name = `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  await adminStatement(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => adminStatement(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
