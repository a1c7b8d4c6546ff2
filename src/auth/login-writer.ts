import type { Database, SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import type { IndexRows } from '../indexing/index-rows.js';
import type { SearchCache } from '../cache/search-cache.js';
import { buildIndexRows } from '../indexing/indexer.js';
import { projectParameters } from '../indexing/parameters.js';
import { INDEX_TABLES } from '../storage/sql.js';

/** Logins written by one statement at most (a statement's JSON arguments stay small). */
const MAX_BATCH = 64;

interface Pending {
  resource: Resource;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Writes new Login resources, the one write of every token request, grouping the Logins of
 * concurrent requests into one statement: while statements run, the Logins that arrive wait and
 * go together in the next (group commit). On the embedded database a statement has a fixed
 * cost of a few hundred microseconds of its worker thread whatever it writes; grouping 8 Logins
 * measured 135 µs of that thread per Login instead of 640 (bench/auth.ts, README). A request
 * alone is written at once, as before. Each Login is validated and stamped by the caller; it is
 * stored exactly as the repository stores a new resource (resource row, history row, index rows
 * including those of its project's own SearchParameters), and answered only after the statement
 * has committed. A failed statement fails the requests whose Logins it carried.
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
      await insertNewResources(this.db, batch.map((pending) => pending.resource));
      for (const project of new Set(batch.map((pending) => pending.resource.meta!.project!))) this.searchCache?.written(project, 'Login');
      for (const pending of batch) pending.resolve();
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    } finally {
      this.running--;
      // What arrived meanwhile goes in the next statement.
      this.startStatements();
    }
  }
}

/**
 * First versions of stamped new resources (id and meta set), in one statement: resource rows,
 * history rows and every kind of index row, each from one JSON argument, as insertFirstVersion
 * (src/storage/sql.ts) writes a single one. One statement is atomic on its own.
 */
export async function insertNewResources(executor: SqlExecutor, resources: readonly Resource[]): Promise<void> {
  const versions: Record<string, unknown>[] = [];
  const rowsByKind = new Map<keyof IndexRows, Record<string, unknown>[]>();
  for (const resource of resources) {
    const meta = resource.meta!;
    const projectId = meta.project!;
    versions.push({ resourceType: resource.resourceType, id: resource.id, projectId, versionId: meta.versionId, lastUpdated: meta.lastUpdated, content: resource });
    const rows = buildIndexRows(resource, await projectParameters(executor, projectId));
    for (const kind of Object.keys(INDEX_TABLES) as (keyof IndexRows)[]) {
      const list = rows[kind];
      if (list.length === 0) continue;
      const target = rowsByKind.get(kind) ?? [];
      list.forEach((row, index) => target.push({ ...row, projectId, resourceType: resource.resourceType, resourceId: resource.id, seq: index + 1 }));
      rowsByKind.set(kind, target);
    }
  }
  const args: unknown[] = [JSON.stringify(versions)];
  const clauses = [
    `v AS (SELECT * FROM json_to_recordset($1::json) AS x("resourceType" text, id text, "projectId" text, "versionId" uuid, "lastUpdated" timestamptz, content json))`,
    `h AS (INSERT INTO resource_history ("versionId", "resourceType", id, "projectId", "lastUpdated", deleted, content)
           SELECT "versionId", "resourceType", id, "projectId", "lastUpdated", false, content FROM v)`,
  ];
  for (const [kind, rows] of rowsByKind) {
    const spec = INDEX_TABLES[kind];
    args.push(JSON.stringify(rows));
    const names = spec.columns.map(([name]) => `"${name}"`).join(', ');
    const recordType = spec.columns.map(([name, type]) => `"${name}" ${type}`).join(', ');
    clauses.push(
      `i_${kind} AS (INSERT INTO ${spec.table} ("projectId", "resourceType", "resourceId", seq, ${names}) ` +
        `SELECT "projectId", "resourceType", "resourceId", seq, ${names} ` +
        `FROM json_to_recordset($${args.length}::json) AS x("projectId" text, "resourceType" text, "resourceId" text, seq int, ${recordType}))`,
    );
  }
  await executor.execute(
    `WITH ${clauses.join(',\n')}
     INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT "resourceType", id, "projectId", "versionId", "lastUpdated", false, content FROM v`,
    args,
  );
}
