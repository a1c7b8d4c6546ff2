import type { Database } from '../db/database.js';
import type { AsyncJob } from '../fhir/resources.js';
import type { Services } from '../operations/context.js';
import { removeExport } from './export-access.js';

/**
 * Export files do not stay forever: EXPORT_FILE_TTL_MS after an export ended (its AsyncJob's last
 * change), any server removes its files, its AsyncJob and its job row, so its status URL and
 * files answer 404. Each server sweeps on a timer; an export is claimed for a minute by a lease
 * on its job row first, so two servers do not remove the same one, and one whose server stopped
 * half-way is removed again whole by another.
 */

/** Exports removed by one sweep: the rest wait for the next. */
const SWEEP_BATCH = 20;
const CLAIM_MS = 60_000;

interface Expired {
  id: string;
  projectId: string;
  content: string | null;
}

export function startExportExpiry(services: Services): { close(): Promise<void> } {
  const ttlMs = services.config.exportFileTtlMs;
  const owner = `export-expiry:${process.pid}:${Math.random().toString(36).slice(2)}`;
  let sweeping: Promise<void> | undefined;
  const sweep = (): void => {
    sweeping ??= sweepExpiredExports(services, owner, ttlMs)
      .catch((error: unknown) => services.log.warn({ err: error }, 'removing expired export files failed'))
      .finally(() => (sweeping = undefined));
  };
  // Often enough that a file outlives its time by at most a quarter of it, at most once a minute.
  const timer = setInterval(sweep, Math.min(Math.max(ttlMs / 4, 50), 60_000));
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await sweeping;
    },
  };
}

/** Removes the exports that ended more than `ttlMs` ago, a batch at a time. */
export async function sweepExpiredExports(services: Services, owner: string, ttlMs: number): Promise<void> {
  for (;;) {
    const expired = await claimExpired(services.db, services.config.jobs.queue, owner, ttlMs);
    for (const { id, projectId, content } of expired) {
      if (content !== null) await removeExport(services.auth, services.binaryStorage, projectId, JSON.parse(content) as AsyncJob);
      await services.db.execute(`DELETE FROM job WHERE id = $1 AND "leaseOwner" = $2`, [id, owner]);
    }
    if (expired.length < SWEEP_BATCH) return;
  }
}

/**
 * Export jobs of `queue` that ended (`done`) whose AsyncJob last changed more than `ttlMs` ago, or
 * is gone, leased to `owner`; with the AsyncJob's text while it is still there (null once deleted).
 * Servers of another queue keep their own exports as long as their own EXPORT_FILE_TTL_MS says.
 */
async function claimExpired(db: Database, queue: string, owner: string, ttlMs: number): Promise<Expired[]> {
  return db.query<Expired>(
    `WITH claimed AS (
       UPDATE job SET "leaseOwner" = $1, "leaseUntil" = now() + $3::int * interval '1 millisecond'
       WHERE id IN (
         SELECT j.id FROM job j LEFT JOIN resource r ON r."resourceType" = 'AsyncJob' AND r.id = j.id
         WHERE j.queue = $4 AND j.operation = 'export' AND j.status = 'done' AND (j."leaseUntil" IS NULL OR j."leaseUntil" < now())
           AND (r.id IS NULL OR r.deleted OR r."lastUpdated" < now() - $2::int * interval '1 millisecond')
         LIMIT ${SWEEP_BATCH} FOR UPDATE OF j SKIP LOCKED)
       RETURNING id, "projectId")
     SELECT c.id, c."projectId", CASE WHEN r.deleted THEN NULL ELSE r.content::text END AS content
     FROM claimed c LEFT JOIN resource r ON r."resourceType" = 'AsyncJob' AND r.id = c.id`,
    [owner, ttlMs, CLAIM_MS, queue],
  );
}
