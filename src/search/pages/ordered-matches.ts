import type { Filter } from '../plan/filters.js';
import type { CompileContext } from '../query/conditions/types.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { firstWindow, joinByPrimaryKey, otherConditions, type DrivenSearch } from './driven.js';
import { runPage, type PageRows, type PageShape } from './rows.js';

/**
 * A filter whose matches an index lists in an order of their own (by a first matching value,
 * then id), the SQL of those matches (with an optional window of index rows), and the other filters.
 */
export interface OrderedDriver {
  matches: (ctx: CompileContext, window?: number) => string;
  others: Filter[];
}

/**
 * A page of a search without _sort whose matches an OrderedDriver lists in its index's order: a
 * string prefix (`Patient?name=smi`: by each resource's first matching value, then id, the order
 * of the string index, 0014_string_index_order), a lone token code (`Observation?code=...`: by
 * first matching system, then id) or a lone number or quantity comparison (numericDriver: by least
 * matching value, then id). The page is read from the first rows of the index range
 * instead of de-duplicating every match (1,666 index rows for "smi" among 100,000 Patients,
 * 50,000 for a code among 1,000,000 Observations), and never depends on how the planner guesses
 * the project's resources are spread among other projects' (a merge by id over every project's
 * Observations, or a table scan; bench/RESULTS.md compares them).
 * The statement reads a window of index rows: its resources are exactly the first ones of the
 * whole order (a resource is in the window when its first matching row is), so when the window
 * yields the page and one more row, that is the page. Otherwise (few matches, filters that drop
 * most of the window, deep offsets) the same statement without the window answers. The
 * window's plan is the same for every value (an ordered range scan that stops early), so it is
 * planned once; the whole statement is planned for its values.
 */
export async function orderedMatchesPage(search: DrivenSearch, driver: OrderedDriver, page: PageShape): Promise<PageRows> {
  const statement = (window: number | undefined): { sql: string; args: SqlArgs } => {
    const { ctx, where } = otherConditions(search, driver.others);
    const sql =
      `SELECT ${page.columns} FROM (${driver.matches(ctx, window)}) p ${joinByPrimaryKey(search, ctx, 'p."resourceId"', where)}` +
      ` ORDER BY p.first, p."resourceId" LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
    return { sql, args: ctx.args };
  };
  const windowed = statement(firstWindow(page));
  const rows = await runPage(search.services.db, windowed.sql, windowed.args, page.count, false, page.kept, true);
  if (rows.more) return rows;
  const whole = statement(undefined);
  return runPage(search.services.db, whole.sql, whole.args, page.count, false, page.kept, false);
}
