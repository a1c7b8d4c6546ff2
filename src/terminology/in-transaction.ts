import { Database, type SqlExecutor } from '../db/database.js';

/**
 * The terminology service wants a Database (it indexes shipped code systems on first use, in a
 * transaction of its own). Work inside a write's transaction (a binding check, an AccessPolicy
 * search with `:in`) gets a stand-in whose transactions run in that transaction.
 */
export function terminologyDatabase(db: SqlExecutor): Database {
  if (db instanceof Database) return db;
  const inTransaction = {
    query: db.query.bind(db),
    execute: db.execute.bind(db),
    transaction: <T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> => work(db),
  };
  return inTransaction as unknown as Database;
}
