import type { QueryOptions, SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import type { StoredVersion } from './types.js';
import type { IndexRows } from '../indexing/row-types.js';
import { buildIndexRows, buildIndexRowsOf } from '../indexing/indexer.js';
import { projectParameters, type ProjectParameters } from '../indexing/parameters.js';
import { creationOf, type ChangeLog, type RecordedChanges } from './change-log.js';

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

const INDEX_KINDS = Object.keys(INDEX_TABLES) as (keyof IndexRows)[];
/** Each index table's column lists, made once (columnsOf). */
const COLUMNS = Object.fromEntries(INDEX_KINDS.map((kind) => [kind, columnsOf(INDEX_TABLES[kind])])) as Record<keyof IndexRows, { names: string; recordType: string }>;

/** The kinds of index rows in a set of them (a bit each, INDEX_KINDS order), in that order. */
function kindsIn(kinds: number): (keyof IndexRows)[] {
  return INDEX_KINDS.filter((_, k) => (kinds & (1 << k)) !== 0);
}

/**
 * CTE clauses inserting every non-empty kind of index row, each from one JSON parameter, so a
 * whole write is one statement. `$type`, `$id`, `$project` are the placeholders of those values.
 */
export function indexInsertClauses(
  rows: IndexRows,
  placeholders: { type: string; id: string; project: string },
  args: unknown[],
): string[] {
  const firstArg = args.length + 1;
  return indexInsertClausesOf(pushIndexArgs(rows, args), placeholders, firstArg);
}

/** Adds the JSON parameter of each non-empty kind of `rows` to `args`; returns those kinds, a bit each (INDEX_KINDS order). */
function pushIndexArgs(rows: IndexRows, args: unknown[]): number {
  let kinds = 0;
  for (let k = 0; k < INDEX_KINDS.length; k++) {
    const list = rows[INDEX_KINDS[k]];
    if (list.length === 0) continue;
    args.push(JSON.stringify(list));
    kinds |= 1 << k;
  }
  return kinds;
}

/** The clauses of indexInsertClauses for the kinds given as bits, whose parameters start at `firstArg`. */
function indexInsertClausesOf(kinds: number, placeholders: { type: string; id: string; project: string }, firstArg: number): string[] {
  return kindsIn(kinds).map((kind, i) => {
    const { names, recordType } = COLUMNS[kind];
    return (
      `i_${kind} AS (INSERT INTO ${INDEX_TABLES[kind].table} ("projectId", "resourceType", "resourceId", seq, ${names}) ` +
      `SELECT ${placeholders.project}, ${placeholders.type}, ${placeholders.id}, (row_number() OVER ())::int, ${names} ` +
      `FROM json_to_recordset($${firstArg + i}::json) AS x(${recordType}))`
    );
  });
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
 * How first versions are sent: an insert of given rows, whose plan is the same whatever the values
 * (planned once per connection), straight to the pool (its arguments are texts).
 */
export const FIRST_VERSIONS: QueryOptions = { planOnce: true, pgValues: true };

/**
 * Writes the first version of a stamped resource (id and meta set): resource row, history row and
 * index rows in one statement, which is atomic on its own. Returns the stored JSON text.
 * `parameters`: the project's own SearchParameters to index too (none when not given).
 */
export async function insertFirstVersion(executor: SqlExecutor, resource: Resource, parameters?: ProjectParameters, log?: ChangeLog): Promise<string> {
  const { text, args, kinds } = versionArgs(resource, resource.meta!.project!, parameters);
  const changes = changeClauses(log && { log, changes: [creationOf(resource)] }, args);
  const sql = changes.length === 0 ? textOf(FIRST_VERSION_TEXTS, kinds, () => firstVersionSql(kinds, [])) : firstVersionSql(kinds, changes);
  await executor.execute(sql, args, FIRST_VERSIONS);
  return text;
}

function firstVersionSql(kinds: number, changes: string[]): string {
  return `WITH ${[...versionClauses(kinds), ...changes].join(',\n')}
     INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     VALUES ($1, $2, $3, $4::uuid, $5::timestamptz, false, $6::json)`;
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
  const { text, args, kinds } = versionArgs(resource, projectId, parameters);
  return { text, args, clauses: versionClauses(kinds) };
}

/** versionWrite's arguments, and the kinds of index rows among them (a bit each). */
function versionArgs(resource: Resource, projectId: string, parameters?: ProjectParameters): { text: string; args: unknown[]; kinds: number } {
  const meta = resource.meta!;
  const text = JSON.stringify(resource);
  const args: unknown[] = [resource.resourceType, resource.id, projectId, meta.versionId, meta.lastUpdated, text];
  const kinds = pushIndexArgs(buildIndexRows(resource, parameters), args);
  return { text, args, kinds };
}

/** versionWrite's clauses for index rows of `kinds` (its arguments from $7). */
function versionClauses(kinds: number): string[] {
  return [
    `h AS (INSERT INTO resource_history ("versionId", "resourceType", id, "projectId", "lastUpdated", deleted, content)
           VALUES ($4::uuid, $1, $2, $3, $5::timestamptz, false, $6::json))`,
    ...indexInsertClausesOf(kinds, { type: '$1', id: '$2', project: '$3' }, 7),
  ];
}

/** What a first-versions statement writes besides the versions: changes to record, index codes to keep. */
export interface FirstVersionsOptions {
  recorded?: RecordedChanges;
  /** When given, only index rows of these parameter codes are written. */
  indexed?: ReadonlySet<string>;
}

/**
 * First versions of many stamped new resources (id and meta set), in one statement: resource rows,
 * history rows and every kind of index row, each from one JSON argument, as insertFirstVersion
 * writes a single one (with the project's own SearchParameters indexed too). One statement is
 * atomic on its own; it serves writers that group resources (the Login writer). Returns each
 * resource's stored JSON, in order.
 */
export async function insertFirstVersions(executor: SqlExecutor, resources: readonly Resource[], options: FirstVersionsOptions = {}): Promise<string[]> {
  const { sql, args, texts } = await firstVersionsStatement(executor, resources, options);
  await executor.execute(sql, args, FIRST_VERSIONS);
  return texts;
}

/**
 * The statement insertFirstVersions sends, built apart so a caller can build it (index rows,
 * JSON) before it opens the transaction that sends it: `reader` only reads the project's
 * SearchParameters. `indexed`: when given, only index rows of these parameter codes are written.
 * `texts`: each resource's stored JSON, in order.
 */
export async function firstVersionsStatement(
  reader: SqlExecutor,
  resources: readonly Resource[],
  { recorded, indexed }: FirstVersionsOptions = {},
): Promise<{ sql: string; args: unknown[]; texts: string[] }> {
  const texts: string[] = [];
  const versions: string[] = [];
  // Each kind's rows of every resource, by INDEX_KINDS position.
  const rowsByKind: (string[] | undefined)[] = [];
  for (const resource of resources) {
    const meta = resource.meta!;
    const projectId = meta.project!;
    const text = JSON.stringify(resource);
    texts.push(text);
    versions.push(withMembers({ resourceType: resource.resourceType, id: resource.id, projectId, versionId: meta.versionId, lastUpdated: meta.lastUpdated }, `"content":${text}`));
    const owner = JSON.stringify({ projectId, resourceType: resource.resourceType, resourceId: resource.id }).slice(0, -1);
    const parameters = await projectParameters(reader, projectId);
    const rows = indexed ? buildIndexRowsOf(resource, parameters, indexed) : buildIndexRows(resource, parameters);
    for (let k = 0; k < INDEX_KINDS.length; k++) {
      const list = indexed ? rows[INDEX_KINDS[k]].filter((row) => indexed.has(row.code)) : rows[INDEX_KINDS[k]];
      if (list.length === 0) continue;
      const target = (rowsByKind[k] ??= []);
      // Every row has a code, so its JSON has a member to follow the owner's.
      for (let index = 0; index < list.length; index++) target.push(`${owner},"seq":${index + 1},${JSON.stringify(list[index]).slice(1)}`);
    }
  }
  const args: unknown[] = [`[${versions.join(',')}]`];
  let kinds = 0;
  for (let k = 0; k < INDEX_KINDS.length; k++) {
    const rows = rowsByKind[k];
    if (rows === undefined) continue;
    args.push(`[${rows.join(',')}]`);
    kinds |= 1 << k;
  }
  const changes = changeClauses(recorded, args);
  const sql = changes.length === 0 ? textOf(FIRST_VERSIONS_TEXTS, kinds, () => firstVersionsSql(kinds, [])) : firstVersionsSql(kinds, changes);
  return { sql, args, texts };
}

/** The text of firstVersionsStatement for index rows of `kinds` (a bit each, their parameters from $2), then `changes`. */
function firstVersionsSql(kinds: number, changes: string[]): string {
  const clauses = [
    `v AS (SELECT * FROM json_to_recordset($1::json) AS x("resourceType" text, id text, "projectId" text, "versionId" uuid, "lastUpdated" timestamptz, content json))`,
    `h AS (INSERT INTO resource_history ("versionId", "resourceType", id, "projectId", "lastUpdated", deleted, content)
           SELECT "versionId", "resourceType", id, "projectId", "lastUpdated", false, content FROM v)`,
  ];
  kindsIn(kinds).forEach((kind, i) => {
    const { names, recordType } = COLUMNS[kind];
    clauses.push(
      `i_${kind} AS (INSERT INTO ${INDEX_TABLES[kind].table} ("projectId", "resourceType", "resourceId", seq, ${names}) ` +
        `SELECT "projectId", "resourceType", "resourceId", seq, ${names} ` +
        `FROM json_to_recordset($${2 + i}::json) AS x("projectId" text, "resourceType" text, "resourceId" text, seq int, ${recordType}))`,
    );
  });
  clauses.push(...changes);
  return `WITH ${clauses.join(',\n')}
     INSERT INTO resource ("resourceType", id, "projectId", "versionId", "lastUpdated", deleted, content)
     SELECT "resourceType", id, "projectId", "versionId", "lastUpdated", false, content FROM v`;
}

/**
 * Statement texts of first versions by the kinds of index rows they write (a bit each), made once:
 * a create then sends the same string each time, whose hash V8 keeps, so finding its prepared
 * statement's name costs a lookup instead of building and hashing a text of a few kilobytes.
 */
const FIRST_VERSION_TEXTS = new Map<number, string>();
const FIRST_VERSIONS_TEXTS = new Map<number, string>();

function textOf(texts: Map<number, string>, kinds: number, build: () => string): string {
  let text = texts.get(kinds);
  if (text === undefined) texts.set(kinds, (text = build()));
  return text;
}

/**
 * `members` (JSON object members, already serialised) added to the JSON object of `fields`. A
 * group's JSON is built from texts (the resource's own text, each index row's with its owner's
 * keys spliced in): copying each index row into a new object with its resource's keys cost a
 * create more server time than building all of its rows.
 */
function withMembers(fields: Record<string, unknown>, members: string): string {
  return `${JSON.stringify(fields).slice(0, -1)},${members}}`;
}

/** The clause recording `recorded`'s changes in the write's own statement (none without changes). */
function changeClauses(recorded: RecordedChanges | undefined, args: unknown[]): string[] {
  if (!recorded || recorded.changes.length === 0) return [];
  args.push(JSON.stringify(recorded.changes.map((change) => recorded.log.rowOf(change))));
  return [`o AS (${recorded.log.insertFromJson(`$${args.length}::json`)})`];
}

/** An index table's value columns: as an insert's column list, and as json_to_recordset's record type. */
function columnsOf(spec: { columns: [string, string][] }): { names: string; recordType: string } {
  return {
    names: spec.columns.map(([name]) => `"${name}"`).join(', '),
    recordType: spec.columns.map(([name, type]) => `"${name}" ${type}`).join(', '),
  };
}

/** Two statements (inside the caller's transaction): drop the old index rows, then write the version. */
export async function replaceVersion(executor: SqlExecutor, resource: Resource, projectId: string): Promise<string> {
  await executor.execute(`WITH ${indexDeleteClauses({ type: '$1', id: '$2' }).join(',\n')} SELECT 1`, [resource.resourceType, resource.id]);
  const { text, args, clauses } = versionWrite(resource, projectId, await projectParameters(executor, projectId));
  await executor.execute(
    `WITH ${clauses.join(',\n')}
     UPDATE resource SET "versionId" = $4::uuid, "lastUpdated" = $5::timestamptz, deleted = false, content = $6::json
     WHERE "resourceType" = $1 AND id = $2`,
    args,
  );
  return text;
}

/** A deletion in one statement: the index rows go, a history row marks it, the resource row keeps no content. */
export async function writeDeletion(executor: SqlExecutor, version: StoredVersion): Promise<void> {
  const clauses = [
    ...indexDeleteClauses({ type: '$1', id: '$2' }),
    `h AS (INSERT INTO resource_history ("versionId", "resourceType", id, "projectId", "lastUpdated", deleted, content)
           VALUES ($4::uuid, $1, $2, $3, $5::timestamptz, true, NULL))`,
  ];
  await executor.execute(
    `WITH ${clauses.join(',\n')}
     UPDATE resource SET "versionId" = $4::uuid, "lastUpdated" = $5::timestamptz, deleted = true, content = NULL
     WHERE "resourceType" = $1 AND id = $2`,
    [version.resourceType, version.id, version.projectId, version.versionId, version.lastUpdated],
  );
}
