import type { ChildProcess } from 'node:child_process';
import type { Database } from '../../src/db/database.js';

/** What the two-server kill tests share: killing the server that runs a job once it has a checkpoint. */

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface JobRowSeen {
  owner: string | null;
  status: string;
  checkpoint: string | null;
}

/**
 * Polls job `id` until it has recorded a checkpoint (or ended), then kills `child` at once
 * (SIGKILL: nothing handed back); answers the row as it was just before.
 */
export async function killOnceCheckpointed(db: Database, id: string, child: ChildProcess): Promise<JobRowSeen | undefined> {
  let row: JobRowSeen | undefined;
  do {
    [row] = await db.query<JobRowSeen>('SELECT "leaseOwner" AS owner, status, checkpoint::text AS checkpoint FROM job WHERE id = $1', [id]);
  } while (row && row.status !== 'done' && row.checkpoint === null && (await sleep(5), true));
  child.kill('SIGKILL');
  return row;
}
