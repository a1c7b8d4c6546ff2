import { loadConfig } from '../../src/config.js';
import { Database, type QueryOptions, type SqlExecutor } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { Identity } from '../../src/identity/identity.js';
import type { SearchResult } from '../../src/search/result.js';
import { search, searchServicesFor } from '../../src/search/service.js';
import { createOwnDatabase } from './own-database.js';
import { testEnv } from './server.js';

/** A migrated database for a file's plans: its own on PostgreSQL (DATABASE_URL, never analyzed), else the embedded one. */
export async function openSearchDatabase(prefix: string): Promise<{ db: Database; close(): Promise<void> }> {
  const own = process.env.DATABASE_URL ? await createOwnDatabase(prefix) : undefined;
  const db = await Database.open(loadConfig(testEnv(own ? { DATABASE_URL: own.url } : {})));
  await migrate(db);
  return {
    db,
    close: async () => {
      await db.close();
      await own?.drop();
    },
  };
}

/** A search of `type` with `query` (as `identity`) through the search service on `db`: its answer and the statements it sent. */
export async function recordedSearch(db: Database, identity: Identity, type: string, query: string): Promise<{ result: SearchResult; sent: string[] }> {
  const sent: string[] = [];
  const database = recordingExecutor(db, sent);
  const config = { ...loadConfig(testEnv()), fhirBaseUrl: 'http://flint.test/fhir/R4' };
  const result = await search(searchServicesFor({ database, identity, config }), type, [...new URLSearchParams(query).entries()]);
  return { result, sent };
}

/** An executor on `db` that adds the text of each statement it queries to `sent`. */
export function recordingExecutor(db: Database, sent: string[]): SqlExecutor {
  return {
    query: <R>(sql: string, args: readonly unknown[] = [], options?: QueryOptions) => {
      sent.push(sql);
      return db.query<R>(sql, args, options);
    },
    execute: (sql: string, args: readonly unknown[] = [], options?: QueryOptions) => db.execute(sql, args, options),
  };
}
