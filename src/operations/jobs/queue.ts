import type { SqlExecutor } from '../../db/database.js';
import type { Identity } from '../../identity/identity.js';
import type { OperationLevel } from '../definition.js';

/**
 * The job table (migration 0022): the queue every server polls. Each statement that changes a
 * claimed job names its owner, so a server that lost its lease (another server resumed the job)
 * changes nothing: its writes find no row and it stops.
 */

/** What a job runs: an operation at a level, with its input, as the identity that asked for it. */
export interface JobSpec {
  readonly id: string;
  readonly projectId: string;
  readonly operation: string;
  readonly level: OperationLevel;
  readonly resourceType?: string;
  readonly resourceId?: string;
  readonly input: unknown;
  /** The caller, without its parsed scopes (rebuilt from `scope` when the job runs). */
  readonly identity: Omit<Identity, 'scopes'>;
  readonly requestUrl: string;
}

export interface ClaimedJob extends JobSpec {
  /** Claims so far, this one included (a resumed job counts its earlier runs). */
  readonly attempts: number;
  /** What the job's last run recorded with `checkpoint`, or undefined on a first run. */
  readonly checkpoint: unknown;
}

interface JobRow {
  id: string;
  projectId: string;
  operation: string;
  level: OperationLevel;
  resourceType: string | null;
  resourceId: string | null;
  input: string;
  identity: string;
  requestUrl: string;
  attempts: number;
  checkpoint: string | null;
}

/**
 * Writes a queued job into `queue` (the JOB_QUEUE of the server that queues it); in the
 * transaction that creates its AsyncJob, so neither exists alone.
 */
export async function enqueueJob(db: SqlExecutor, queue: string, job: JobSpec): Promise<void> {
  await db.execute(
    `INSERT INTO job (id, "projectId", operation, level, "resourceType", "resourceId", input, identity, "requestUrl", status, queue)
     VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8::json, $9, 'queued', $10)`,
    [
      job.id,
      job.projectId,
      job.operation,
      job.level,
      job.resourceType ?? null,
      job.resourceId ?? null,
      JSON.stringify(job.input ?? {}),
      JSON.stringify(job.identity),
      job.requestUrl,
      queue,
    ],
  );
}

/**
 * Claims one job of `queue` for `owner` until `leaseMs` from now: a queued one whose time has come,
 * or a running one whose lease has passed (its server stopped), among those running one of
 * `operations` (a server of another version may offer others). SKIP LOCKED: servers claiming at
 * the same moment take different jobs, and none waits for another.
 */
export async function claimJob(db: SqlExecutor, queue: string, owner: string, leaseMs: number, operations: readonly string[]): Promise<ClaimedJob | undefined> {
  const rows = await db.query<JobRow>(
    `UPDATE job SET status = 'running', "leaseOwner" = $1, "leaseUntil" = now() + $2::int * interval '1 millisecond', attempts = attempts + 1
     WHERE id = (
       SELECT id FROM job
       WHERE queue = $4 AND ((status = 'queued' AND "runAfter" <= now()) OR (status = 'running' AND "leaseUntil" < now()))
         AND operation IN (SELECT json_array_elements_text($3::json))
       ORDER BY "runAfter" LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING id, "projectId", operation, level, "resourceType", "resourceId", input::text AS input, identity::text AS identity,
       "requestUrl", attempts, checkpoint::text AS checkpoint`,
    [owner, leaseMs, JSON.stringify(operations), queue],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    projectId: row.projectId,
    operation: row.operation,
    level: row.level,
    resourceType: row.resourceType ?? undefined,
    resourceId: row.resourceId ?? undefined,
    input: JSON.parse(row.input),
    identity: JSON.parse(row.identity) as JobSpec['identity'],
    requestUrl: row.requestUrl,
    attempts: Number(row.attempts),
    checkpoint: row.checkpoint === null ? undefined : JSON.parse(row.checkpoint),
  };
}

/** Extends the lease; false when `owner` no longer holds the job (resumed elsewhere, cancelled, done). */
export async function renewLease(db: SqlExecutor, id: string, owner: string, leaseMs: number): Promise<boolean> {
  const changed = await db.execute(
    `UPDATE job SET "leaseUntil" = now() + $3::int * interval '1 millisecond' WHERE id = $1 AND "leaseOwner" = $2 AND status = 'running'`,
    [id, owner, leaseMs],
  );
  return changed > 0;
}

/** Records where a resumed run starts; false (nothing written) when `owner` no longer holds the job. */
export async function saveCheckpoint(db: SqlExecutor, id: string, owner: string, state: unknown): Promise<boolean> {
  const changed = await db.execute(`UPDATE job SET checkpoint = $3::json WHERE id = $1 AND "leaseOwner" = $2 AND status = 'running'`, [
    id,
    owner,
    JSON.stringify(state ?? null),
  ]);
  return changed > 0;
}

/** Gives a job back to the queue for another attempt after `delayMs`, keeping its checkpoint. */
export async function retryJobLater(db: SqlExecutor, id: string, owner: string, delayMs: number, reason: string): Promise<boolean> {
  const changed = await db.execute(
    `UPDATE job SET status = 'queued', "leaseOwner" = NULL, "leaseUntil" = NULL, "lastError" = $4,
       "runAfter" = now() + $3::int * interval '1 millisecond'
     WHERE id = $1 AND "leaseOwner" = $2 AND status = 'running'`,
    [id, owner, delayMs, reason],
  );
  return changed > 0;
}

/** Ends a job for good. */
export async function endJob(db: SqlExecutor, id: string, owner: string, reason?: string): Promise<boolean> {
  const changed = await db.execute(
    `UPDATE job SET status = 'done', "leaseOwner" = NULL, "leaseUntil" = NULL, "lastError" = coalesce($3, "lastError")
     WHERE id = $1 AND status <> 'done' AND "leaseOwner" = $2`,
    [id, owner, reason ?? null],
  );
  return changed > 0;
}

/** Gives a job back to the queue now, not counting this run as an attempt (its server shuts down). */
export async function releaseJob(db: SqlExecutor, id: string, owner: string): Promise<boolean> {
  const changed = await db.execute(
    `UPDATE job SET status = 'queued', "leaseOwner" = NULL, "leaseUntil" = NULL, "runAfter" = now(), attempts = greatest(attempts - 1, 0)
     WHERE id = $1 AND "leaseOwner" = $2 AND status = 'running'`,
    [id, owner],
  );
  return changed > 0;
}

/** A job's operation and the identity that started it (for endpoints only its starter may use); undefined when there is none. */
export async function jobStarter(db: SqlExecutor, id: string): Promise<{ operation: string; projectId: string; identity: JobSpec['identity'] } | undefined> {
  const [row] = await db.query<{ operation: string; projectId: string; identity: string }>(
    'SELECT operation, "projectId", identity::text AS identity FROM job WHERE id = $1',
    [id],
  );
  return row && { operation: row.operation, projectId: row.projectId, identity: JSON.parse(row.identity) as JobSpec['identity'] };
}
