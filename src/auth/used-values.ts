import type { SqlExecutor } from '../db/database.js';

/** One sweep of expired entries per this many uses: the table stays small without a job. */
const SWEEP_EVERY = 100;
let usesSinceSweep = 0;

/**
 * Records `key` as used until `expiresAt`; false when it was already used (a replay). The table
 * (auth_used_value) is in the database so that every server sees every use: a value replayed
 * against another server is refused too. An entry past its expiry no longer counts.
 */
export async function useOnce(db: SqlExecutor, key: string, expiresAt: Date): Promise<boolean> {
  if (++usesSinceSweep >= SWEEP_EVERY) {
    usesSinceSweep = 0;
    await db.execute(`DELETE FROM auth_used_value WHERE "expiresAt" < now()`);
  }
  const inserted = await db.execute(
    `INSERT INTO auth_used_value (key, "expiresAt") VALUES ($1, $2::timestamptz)
     ON CONFLICT (key) DO UPDATE SET "expiresAt" = EXCLUDED."expiresAt" WHERE auth_used_value."expiresAt" < now()`,
    [key, expiresAt.toISOString()],
  );
  return inserted > 0;
}
