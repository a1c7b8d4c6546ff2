import type { Database } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import type { SearchCache } from '../cache/search-cache.js';
import { insertFirstVersions } from '../storage/sql.js';

/** Logins written by one statement at most (a statement's JSON arguments stay small). */
const MAX_BATCH = 64;

interface Pending {
  resource: Resource;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Writes new Login resources, the one write of every token request, grouping the Logins of
 * concurrent requests into one statement: while statements run, the Logins that arrive wait and go
 * together in the next (group commit). On the embedded database a statement has a fixed cost of its
 * worker thread whatever it writes; grouping Logins shares that cost among them, so each Login
 * takes far less of that thread than when written alone (bench/auth.ts; measured: see
 * bench/RESULTS.md). A request alone is written at once, as before. Each Login is validated and
 * stamped by the caller; it is stored exactly as the repository stores a new resource (resource
 * row, history row, index rows including those of its project's own SearchParameters), and answered
 * only after the statement has committed. When a statement of several Logins fails, each is
 * written again alone, so that a Login the database refuses fails its own request only.
 */
export class LoginWriter {
  private readonly queue: Pending[] = [];
  private running = 0;
  private scheduled = false;
  /**
   * Statements in flight at once: one on the embedded database (it has one connection), a few on
   * PostgreSQL, whose round trips are long enough that one at a time would hold requests back.
   */
  private readonly concurrency: number;

  constructor(
    private readonly db: Database,
    private readonly searchCache?: SearchCache,
  ) {
    this.concurrency = db.kind === 'pglite' ? 1 : 4;
  }

  write(resource: Resource): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ resource, resolve, reject });
      if (!this.scheduled && this.running < this.concurrency) {
        this.scheduled = true;
        // The requests already parsed in this turn of the event loop join the same statement.
        setImmediate(() => {
          this.scheduled = false;
          this.startStatements();
        });
      }
    });
  }

  private startStatements(): void {
    while (this.queue.length > 0 && this.running < this.concurrency) {
      this.running++;
      void this.runStatement(this.queue.splice(0, MAX_BATCH));
    }
  }

  private async runStatement(batch: Pending[]): Promise<void> {
    try {
      await this.writeTogether(batch);
    } catch (error) {
      if (batch.length === 1) batch[0].reject(error);
      // One Login the statement failed on must not fail the others it carried: each is written
      // alone, and only those that fail alone fail their request.
      else for (const pending of batch) await this.writeTogether([pending]).catch((alone: unknown) => pending.reject(alone));
    } finally {
      this.running--;
      // What arrived meanwhile goes in the next statement.
      this.startStatements();
    }
  }

  private async writeTogether(batch: Pending[]): Promise<void> {
    await insertFirstVersions(this.db, batch.map((pending) => pending.resource));
    for (const project of new Set(batch.map((pending) => pending.resource.meta!.project!))) this.searchCache?.written(project, 'Login');
    for (const pending of batch) pending.resolve();
  }
}
