import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import type { IndexRows } from '../indexing/index-rows.js';
import { buildIndexRows } from '../indexing/indexer.js';
import type { ProjectParameters } from '../indexing/parameters.js';

/** Column lists of the index tables, in the order the JSON row objects are unpacked. */
export const INDEX_TABLES: Record<keyof IndexRows, { table: string; columns: [string, string][] }> = {
  token: { table: 'token_index', columns: [['code', 'text'], ['system', 'text'], ['value', 'text'], ['text', 'text']] },
  string: { table: 'string_index', columns: [['code', 'text'], ['value', 'text'], ['exact', 'text']] },
  date: { table: 'date_index', columns: [['code', 'text'], ['start', 'timestamptz'], ['end', 'timestamptz']] },
  number: { table: 'number_index', columns: [['code', 'text'], ['value', 'float8'], ['high', 'float8']] },
  quantity: {
    table: 'quantity_index',
    columns: [['code', 'text'], ['value', 'float8'], ['system', 'text'], ['unit', 'text'], ['high', 'float8']],
  },
  reference: {
    table: 'reference_index',
    columns: [['code', 'text'], ['targetType', 'text'], ['targetId', 'text'], ['url', 'text']],
  },
  uri: { table: 'uri_index', columns: [['code', 'text'], ['value', 'text']] },
  composite: {
    table: 'composite_index',
    columns: [
      ['code', 'text'],
      ...[1, 2, 3].flatMap((n): [string, string][] => [
        [`system${n}`, 'text'],
        [`value${n}`, 'text'],
        [`number${n}`, 'float8'],
        [`high${n}`, 'float8'],
        [`start${n}`, 'timestamptz'],
        [`end${n}`, 'timestamptz'],
      ]),
    ],
  },
};

export const INDEX_TABLE_NAMES = Object.values(INDEX_TABLES).map((t) => t.table);

/**
 * CTE clauses inserting every non-empty kind of index row, each from one JSON parameter, so a
 * whole write is one statement. `$type`, `$id`, `$project` are the placeholders of those values.
 */
export function indexInsertClauses(
  rows: IndexRows,
  placeholders: { type: string; id: string; project: string },
  args: unknown[],
): string[] {
  const clauses: string[] = [];
  for (const [kind, spec] of Object.entries(INDEX_TABLES) as [keyof IndexRows, (typeof INDEX_TABLES)[keyof IndexRows]][]) {
    const list = rows[kind];
    if (list.length === 0) continue;
    args.push(JSON.stringify(list));
    const names = spec.columns.map(([name]) => `"${name}"`).join(', ');
    const recordType = spec.columns.map(([name, type]) => `"${name}" ${type}`).join(', ');
    clauses.push(
      `i_${kind} AS (INSERT INTO ${spec.table} ("projectId", "resourceType", "resourceId", seq, ${names}) ` +
        `SELECT ${placeholders.project}, ${placeholders.type}, ${placeholders.id}, (row_number() OVER ())::int, ${names} ` +
        `FROM json_to_recordset($${args.length}::json) AS x(${recordType}))`,
    );
  }
  return clauses;
}

/**
 * CTE clauses deleting every index row of one resource. Run them in a statement of their own
 * before inserting new rows: the new rows reuse the (resourceType, resourceId, seq) keys.
 */
export function indexDeleteClauses(placeholders: { type: string; id: string }): string[] {
  return INDEX_TABLE_NAMES.map(
    (table) =>
      `d_${table} AS (DELETE FROM ${table} WHERE "resourceType" = ${placeholders.type} AND "resourceId" = ${placeholders.id})`,
  );
}

/**
 * Writes the first version of a stamped resource (id and meta set): resource row, history row and
 * index rows in one statement, which is atomic on its own. Returns the stored JSON text.
 * `parameters`: the project's own SearchParameters to index too (none when not given).
 */
export async function insertFirstVersion(executor: SqlExecutor, resource: Resource, parameters?: ProjectParameters): Promise<string> {
  const { text, args, clauses } = versionWrite(resource, resource.meta!.project!, parameters);
  await executor.execute(
    `WITH ${clauses.join(',\n')}
     INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     VALUES ($1, $2, $3, $4::uuid, $5::timestamptz, false, $6::json)`,
    args,
  );
  return text;
}

/**
 * The parts every version write shares: arguments $1..$6 (type, id, project, versionId,
 * lastUpdated, JSON text) and CTE clauses adding the history row and the index rows.
 */
export function versionWrite(
  resource: Resource,
  projectId: string,
  parameters?: ProjectParameters,
): { text: string; args: unknown[]; clauses: string[] } {
  const meta = resource.meta!;
  const text = JSON.stringify(resource);
  const args: unknown[] = [resource.resourceType, resource.id, projectId, meta.versionId, meta.lastUpdated, text];
  const clauses = [
    `h AS (INSERT INTO resource_history ("versionId", "resourceType", id, "projectId", "lastUpdated", deleted, content)
           VALUES ($4::uuid, $1, $2, $3, $5::timestamptz, false, $6::json))`,
    ...indexInsertClauses(buildIndexRows(resource, parameters), { type: '$1', id: '$2', project: '$3' }, args),
  ];
  return { text, args, clauses };
}
