import { toInstant, type SqlExecutor } from '../../db/database.js';
import type { SqlArgs } from '../../db/sql-args.js';
import type { SearchRow } from '../result.js';
import { statementKey, type SearchCache, type WriteDependency } from '../../cache/search-cache.js';

/** The columns a page selects, its rows, and how a page statement runs (or is answered from kept pages). */

export const COLUMNS = `r."resourceType", r.id, r."projectId", r."versionId"::text AS "versionId", r."lastUpdated", r.content::text AS content`;
/** COLUMNS without the content (SearchOptions.withoutContent). */
export const KEY_COLUMNS = `r."resourceType", r.id, r."projectId", r."versionId"::text AS "versionId", r."lastUpdated"`;
/** COLUMNS and KEY_COLUMNS as read from a subquery `u` that selected them. */
const KEY_COLUMNS_OF_U = 'u."resourceType", u.id, u."projectId", u."versionId", u."lastUpdated"';
const COLUMNS_OF_U = `${KEY_COLUMNS_OF_U}, u.content`;

/** The columns of `columns` (COLUMNS or KEY_COLUMNS) as read from a subquery `u` that selected them. */
export function columnsOfU(columns: string): string {
  return columns === COLUMNS ? COLUMNS_OF_U : KEY_COLUMNS_OF_U;
}

/** A page of matches, and whether more follow. */
export interface PageRows {
  rows: SearchRow[];
  more: boolean;
}

/** Where pages are kept (the embedded database), and whose writes void them. */
export type KeptPages = { cache: SearchCache; dependency: WriteDependency };

/** What every page strategy is asked for: `count` rows after `offset`, with `columns`. */
export type PageShape = {
  count: number;
  offset: number;
  columns: string;
  kept: KeptPages | undefined;
  /** The largest window of index rows the page reads (growing-windows.ts lastWindow), when smaller than usual. */
  windowCap?: number;
  /** The last window a walk reads (lastWindow), when larger than usual: a chain's page that no filter's candidates could drive. */
  windowFloor?: number;
};

interface RawRow {
  resourceType: string;
  id: string;
  projectId: string;
  versionId: string;
  lastUpdated: unknown;
  /** Absent under KEY_COLUMNS. */
  content?: string;
}

function toRow(raw: RawRow): SearchRow {
  return {
    resourceType: raw.resourceType,
    id: raw.id,
    projectId: raw.projectId,
    versionId: raw.versionId,
    lastUpdated: toInstant(raw.lastUpdated),
    text: raw.content ?? '',
  };
}

/** Rows of COLUMNS from `sql`. */
export async function queryRows(db: SqlExecutor, sql: string, args: unknown[]): Promise<SearchRow[]> {
  return (await db.query<RawRow>(sql, args)).map(toRow);
}

/** Runs a page statement that asks for `count + 1` rows (or answers it from the kept pages). */
export async function runPage(
  db: SqlExecutor,
  sql: string,
  args: SqlArgs,
  count: number,
  backwards: boolean,
  kept: KeptPages | undefined,
  planOnce: boolean,
): Promise<PageRows> {
  const key = kept && statementKey(sql, args.values);
  const page = key ? kept.cache.getPage<PageRows>(key) : undefined;
  // A kept page is shared: callers get their own array (rows are not changed by anyone).
  if (page) return { rows: [...page.rows], more: page.more };
  const at = kept?.cache.now();
  const raw = await db.query<RawRow>(sql, args.values, { planOnce });
  const more = raw.length > count;
  const rows = raw.slice(0, count).map(toRow);
  if (backwards) rows.reverse();
  if (key && at !== undefined) kept.cache.setPage(key, kept.dependency, at, { rows: [...rows], more }, rows.length);
  return { rows, more };
}
