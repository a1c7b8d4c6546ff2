import type { IndexRows } from '../search/index-rows.js';

/** Column lists of the index tables, in the order the JSON row objects are unpacked. */
const INDEX_TABLES: Record<keyof IndexRows, { table: string; columns: [string, string][] }> = {
  token: { table: 'token_index', columns: [['code', 'text'], ['system', 'text'], ['value', 'text'], ['text', 'text']] },
  string: { table: 'string_index', columns: [['code', 'text'], ['value', 'text'], ['exact', 'text']] },
  date: { table: 'date_index', columns: [['code', 'text'], ['start', 'timestamptz'], ['end', 'timestamptz']] },
  number: { table: 'number_index', columns: [['code', 'text'], ['value', 'float8']] },
  quantity: {
    table: 'quantity_index',
    columns: [['code', 'text'], ['value', 'float8'], ['system', 'text'], ['unit', 'text']],
  },
  reference: {
    table: 'reference_index',
    columns: [['code', 'text'], ['targetType', 'text'], ['targetId', 'text'], ['url', 'text']],
  },
  uri: { table: 'uri_index', columns: [['code', 'text'], ['value', 'text']] },
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
