import type { SqlExecutor } from '../../db/database.js';
import { errors } from '../../fhir/outcome.js';
import type { SortKey } from '../plan/control.js';
import type { CursorPosition } from '../query/cursor.js';
import { SqlArgs } from '../../db/sql-args.js';
import { codesArg } from '../query/conditions/shared.js';
import { everyProjectStatement, orderBy, type OrderKey } from './every-project.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/** The general page: the search's conditions on the resources, in the order asked for, after an offset or a cursor. */
export interface PageStatement extends PageShape {
  args: SqlArgs;
  where: string;
  sort: readonly SortKey[];
  position: CursorPosition | undefined;
  multiType: boolean;
  planOnce: boolean;
  /** An SQL array of projectIds (everyProject) to read the page from one project at a time, or undefined. */
  projects: string | undefined;
}

export async function pageRows(db: SqlExecutor, page: PageStatement): Promise<PageRows> {
  const { count, offset, position } = page;
  const args = new SqlArgs();
  args.values.push(...page.args.values);
  const conditions = [page.where];
  const after = position && positionCondition(position, page.multiType, args);
  if (after) conditions.push(after);
  const keys = position ? cursorKeys(position, page.multiType) : sortKeys(page.sort, page.multiType, args);
  const limit = args.add(count + 1);
  const skip = position ? '' : ` OFFSET ${args.add(offset)}`;
  const where = conditions.join(' AND ');
  const sql =
    page.projects === undefined
      ? `SELECT ${page.columns} FROM resource r WHERE ${where}${orderBy(keys, (key) => key.expression)} LIMIT ${limit}${skip}`
      : everyProjectStatement(page, page.projects, where, keys, args, limit, skip);
  return runPage(db, sql, args, count, position?.direction === 'p', page.kept, page.planOnce);
}

/**
 * The page of `sort`'s order among `ids` (resources of `type` that meet the search, each read by
 * primary key): the merge of pages read elsewhere, each already the first rows of its part.
 */
export async function pageOfCandidates(db: SqlExecutor, page: PageShape, type: string, ids: readonly string[], sort: readonly SortKey[]): Promise<PageRows> {
  const args = new SqlArgs();
  const keys = sortKeys(sort, false, args);
  const sql =
    `SELECT ${page.columns} FROM unnest(${args.add(ids)}::text[]) c(id)` +
    ` CROSS JOIN LATERAL (SELECT * FROM resource r WHERE r."resourceType" = ${args.add(type)} AND r.id = c.id LIMIT 1) r` +
    `${orderBy(keys, (key) => key.expression)} LIMIT ${args.add(page.count + 1)} OFFSET ${args.add(page.offset)}`;
  return runPage(db, sql, args, page.count, false, page.kept, false);
}

/** The rows of `r` after a cursor's position (before it, for a previous page), in keyset order. */
export function positionCondition(position: CursorPosition, multiType: boolean, args: SqlArgs): string {
  const keyColumns = multiType ? 'r."lastUpdated", r.id, r."resourceType"' : 'r."lastUpdated", r.id';
  const keyValues = [args.add(position.lastUpdated, 'timestamptz'), args.add(position.id)];
  if (multiType) keyValues.push(args.add(position.resourceType));
  return `(${keyColumns}) ${position.direction === 'p' ? '<' : '>'} (${keyValues.join(', ')})`;
}

/** A cursor's keyset order: towards the position for a previous page (its rows are then turned round). */
export function cursorKeys(position: CursorPosition, multiType: boolean): OrderKey[] {
  const direction = position.direction === 'p' ? 'DESC' : 'ASC';
  const keys = [
    { expression: 'r."lastUpdated"', direction },
    { expression: 'r.id', direction },
  ];
  if (multiType) keys.push({ expression: 'r."resourceType"', direction });
  return keys;
}

/**
 * `_sort`'s order, ties broken by id. Without _sort (SPEC 4.8 rule 3) the order is unspecified: no
 * keys, so the planner may stop at the first `count` matches of whatever index it drives from.
 */
export function sortKeys(sort: readonly SortKey[], multiType: boolean, args: SqlArgs, row = 'r'): OrderKey[] {
  if (sort.length === 0) return [];
  const keys: OrderKey[] = [];
  for (const key of sort) {
    // Columns are never null; spelling NULLS LAST on them would keep a backward index scan
    // from serving a descending sort.
    const nulls = key.code === '_id' || key.code === '_lastUpdated' ? '' : ' NULLS LAST';
    keys.push({ expression: sortExpression(key, args, row), direction: `${key.descending ? 'DESC' : 'ASC'}${nulls}` });
  }
  // Ties are broken by id (in the direction of a lone _lastUpdated key, so one index serves both).
  const idDirection = sort.length === 1 && sort[0].code === '_lastUpdated' && sort[0].descending ? 'DESC' : 'ASC';
  keys.push({ expression: `${row}.id`, direction: idDirection });
  if (multiType) keys.push({ expression: `${row}."resourceType"`, direction: idDirection });
  return keys;
}

/**
 * The SQL expression a sort key orders by (`row`: the resource, or a row of its projectId,
 * resourceType and id): a resource column or the min/max of its index rows,
 * read through the table's primary key (resourceType, resourceId, seq): the resource's own rows.
 * The project and code are one `IS TRUE` expression so that no index on the value can serve the
 * aggregate: PostgreSQL answers a min/max from an index in the value's order, and the sort indexes
 * hold resourceId after the value, so each resource read every row of the parameter in its
 * project up to its own (`Observation?subject=Patient/1&_sort=-date`: 10 resources, seconds at
 * 1,000,000 dates; a super admin's sorted search of every project did not finish). The rows are
 * read in seq order, the primary key's: planned on empty tables (a generic plan, kept per
 * connection), a whole scan of a sort index cost the same and was taken.
 */
export function sortExpression(key: SortKey, args: SqlArgs, row = 'r'): string {
  if (key.code === '_id') return `${row}.id`;
  if (key.code === '_lastUpdated') return `${row}."lastUpdated"`;
  const agg = key.descending ? 'max' : 'min';
  const from = (table: string, column: string): string =>
    `(SELECT ${agg}(s.v) FROM (SELECT ${column} AS v FROM ${table} o WHERE o."resourceType" = ${row}."resourceType" AND o."resourceId" = ${row}.id` +
    ` AND (o."projectId" = ${row}."projectId" AND o.code = ${codesArg(key.codes ?? [key.code], args)}) IS TRUE ORDER BY o.seq OFFSET 0) s)`;
  switch (key.param?.type) {
    case 'string':
      // Byte order, the string index's (text_pattern_ops), whatever the database's collation.
      return from('string_index', 'o.value COLLATE "C"');
    case 'token':
      return from('token_index', 'o.value');
    case 'date':
      return key.descending ? from('date_index', 'COALESCE(o."end", o.start)') : from('date_index', 'COALESCE(o.start, o."end")');
    case 'number':
      // A Range (RiskAssessment probabilityRange) sorts as a quantity Range does, below.
      return key.descending ? from('number_index', 'COALESCE(o.high, o.value)') : from('number_index', 'o.value');
    case 'quantity':
      // A Range sorts by its low ascending and its high descending, as a Period does; an open
      // end is infinite, so it comes first.
      return key.descending ? from('quantity_index', 'COALESCE(o.high, o.value)') : from('quantity_index', 'o.value');
    case 'reference':
      return from('reference_index', `COALESCE(o."targetType" || '/' || o."targetId", o.url)`);
    case 'uri':
      return from('uri_index', 'o.value');
    default:
      throw errors.invalid(`Cannot sort by ${key.code}`, '_sort');
  }
}
