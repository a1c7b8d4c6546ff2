import type { SqlArgs } from '../../db/sql-args.js';
import { columnsOfU } from './rows.js';

/** A term of a page's ORDER BY: an SQL expression and its direction. */
export interface OrderKey {
  expression: string;
  direction: string;
}

/** ` ORDER BY` the keys, each spelled by `spell`, or '' for none. */
export function orderBy(keys: readonly OrderKey[], spell: (key: OrderKey, index: number) => string): string {
  return keys.length > 0 ? ` ORDER BY ${keys.map((key, i) => `${spell(key, i)} ${key.direction}`).join(', ')}` : '';
}

/**
 * Every projectId present in an index table, one index probe each (a loose index scan: the
 * table's search indexes lead with projectId). A super admin's count and page name them all so
 * that those indexes serve them; without a projectId PostgreSQL can only scan the whole table.
 */
export function everyProject(table: string): string {
  return (
    `ARRAY(WITH RECURSIVE p(id) AS (SELECT min("projectId") FROM ${table} UNION ALL` +
    ` SELECT (SELECT min(t."projectId") FROM ${table} t WHERE t."projectId" > p.id) FROM p WHERE p.id IS NOT NULL)` +
    ` SELECT id FROM p WHERE id IS NOT NULL)`
  );
}

/**
 * A super admin's page of every project (`projects`: an SQL array of their ids, everyProject):
 * the indexes lead with projectId, so a statement without one can only scan a whole index. Each
 * project's first offset + count + 1 rows, read with its projectId (the planner carries
 * `r.projectId = p.id` into every index condition), then the page of their merge: one index probe
 * per project and the few rows each gives. `limit` and `skip` are the page's own.
 */
export function everyProjectStatement(
  page: { columns: string; count: number; offset: number },
  projects: string,
  where: string,
  keys: readonly OrderKey[],
  args: SqlArgs,
  limit: string,
  skip: string,
): string {
  const sortColumns = keys.map((key, i) => `, ${key.expression} AS k${i}`).join('');
  const each =
    `SELECT ${page.columns}${sortColumns} FROM resource r WHERE r."projectId" = p.id AND ${where}` +
    `${orderBy(keys, (key) => key.expression)} LIMIT ${args.add(page.offset + page.count + 1)}`;
  return `SELECT ${columnsOfU(page.columns)} FROM unnest(${projects}) p(id) CROSS JOIN LATERAL (${each}) u${orderBy(keys, (_, i) => `u.k${i}`)} LIMIT ${limit}${skip}`;
}
