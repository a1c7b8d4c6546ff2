import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import { projectParameters } from '../indexing/parameters.js';
import { creationOf, type ChangeLog } from './change-log.js';
import { insertingNewId } from './current-rows.js';
import { insertFirstVersion, insertFirstVersions } from './sql.js';

/**
 * Group commit for creates that need no transaction of their own (no write hook, no write check,
 * not inside a transaction Bundle): while `maxInFlight` statements of creates are running, the
 * creates that arrive wait, and the next statement writes all of them at once (resource, history
 * and index rows of each) in one commit. Below that bound, the creates that arrive in the same
 * turn of the event loop (requests read together) also go in one statement, which starts once
 * the turn's I/O callbacks have run (setImmediate): a create alone waits for nothing else. A
 * create's database cost is mostly the statement's fixed part and the commit, so under load each
 * create costs less (bench/create-statements.ts). Each create is answered after the commit
 * that holds it; when a group's statement fails, its creates are retried one at a time, so only
 * the create at fault fails, with its own error. A create the change log records (a project with
 * Subscriptions) carries its outbox row in the same statement, so it is grouped too.
 */
export class CreateBatches {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  private startScheduled = false;

  constructor(
    private readonly db: SqlExecutor,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
    /** The server's change log, which a group's creates may be recorded in. */
    private readonly changeLog?: ChangeLog,
  ) {}

  /**
   * Inserts the first version of a stamped resource, and its creation in `log` when given;
   * resolves with its stored text once it has committed. Groups record in the server's change log
   * only: a create recorded in another log goes alone.
   */
  insert(resource: Resource, log?: ChangeLog): Promise<string> {
    if (log && log !== this.changeLog) return insertNewResource(this.db, resource, log);
    const written = new Promise<string>((resolve, reject) => this.waiting.push({ resource, log, resolve, reject }));
    if (this.inFlight < this.maxInFlight && !this.startScheduled) {
      this.startScheduled = true;
      setImmediate(() => {
        this.startScheduled = false;
        this.startNext();
      });
    }
    return written;
  }

  private startNext(): void {
    if (this.inFlight >= this.maxInFlight || this.waiting.length === 0) return;
    const group = this.waiting.splice(0, this.maxBatch);
    this.inFlight++;
    void this.runGroup(group).finally(() => this.finished());
  }

  private finished(): void {
    this.inFlight--;
    this.startNext();
  }

  private async runGroup(group: readonly Waiting[]): Promise<void> {
    if (group.length > 1) {
      try {
        const recorded = group.filter((item) => item.log !== undefined).map((item) => creationOf(item.resource));
        const texts = await insertFirstVersions(this.db, group.map((item) => item.resource), { recorded: this.changeLog && { log: this.changeLog, changes: recorded } });
        group.forEach((item, index) => item.resolve(texts[index]));
        return;
      } catch {
        // Retried one at a time below, so each create gets its own answer.
      }
    }
    await Promise.all(group.map((item) => insertNewResource(this.db, item.resource, item.log).then(item.resolve, item.reject)));
  }
}

/**
 * One statement: resource row, history row and index rows (a single statement is atomic), and the
 * creation in `log` when given. The index rows include those of the project's own
 * SearchParameters (src/indexing/parameters.ts).
 */
export async function insertNewResource(executor: SqlExecutor, resource: Resource, log?: ChangeLog): Promise<string> {
  const parameters = await projectParameters(executor, resource.meta!.project!);
  return insertingNewId(() => insertFirstVersion(executor, resource, parameters, log));
}

interface Waiting {
  readonly resource: Resource;
  readonly log: ChangeLog | undefined;
  resolve(text: string): void;
  reject(error: unknown): void;
}
