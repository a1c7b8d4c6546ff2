import { plainParameter, type Filter } from '../plan/filters.js';
import { isOneTokenCode, tokenCodeMatches, tokenCodeRowCount } from '../query/conditions/token.js';
import { freshContext, type DrivenSearch } from './driven.js';
import { deepPage } from './growing-windows.js';
import type { OrderedDriver } from './ordered-matches.js';
import type { PageShape } from './rows.js';

/**
 * How far each of several token codes' rows in a project are counted to choose the one that
 * drives: a code with fewer rows than this drives instead of a commoner one (all its rows fit the
 * second window of a first page); codes that all have as many keep the first. A fixed bound, so
 * that every page of a search is driven by the same code.
 */
const RARE_CODE_ROWS = 800;

/**
 * How far codes are counted for a deep page (one whose last window is larger than a first page's),
 * as for an exact count: far enough to tell a common code (50,000 rows) from one every resource
 * has. Counting costs less than the windows it saves: with the first pages' bound,
 * `status=final&code=..&_offset=2000` was driven by every final Observation (a tie at 800 keeps the
 * first filter) and probed 200,000 of them for the code, whose own rows held the page in the first
 * window. A bound of the page's last window tied at `_offset=1000` and only added the counting.
 */
const DEEP_CODE_ROWS = 100_000;

/** How far each code is counted for `page`: RARE_CODE_ROWS, or DEEP_CODE_ROWS for a deep page. */
function codeRowsCounted(page: PageShape): number {
  return deepPage(page) ? DEEP_CODE_ROWS : RARE_CODE_ROWS;
}

export interface TokenCodeDriver extends OrderedDriver {
  /** The only filter besides `_project`. */
  alone: boolean;
  /** Whether a window of this many index rows holds every row of the code. */
  holdsEveryRow: (window: number) => Promise<boolean>;
}

/** The index rows of a token code filter in the search's one project, counted up to `bound` (tokenCodeRowCount). */
export async function codeRowsInProject(search: Pick<DrivenSearch, 'services' | 'type' | 'projectId' | 'ctx'>, { name, value }: Filter, bound: number): Promise<number> {
  const ctx = freshContext(search);
  const [row] = await search.services.db.query<{ n: number }>(tokenCodeRowCount(name, value, search.type, search.projectId, ctx, bound), ctx.args.values);
  return row.n;
}

/**
 * The token code among the filters (`Observation?code=http://loinc.org|8867-4`) with the fewest
 * index rows in the project (rarestTokenCode, counted as far as codeRowsCounted), which drives the
 * page. A deep page may so be driven by another code than the first pages; both list the matches
 * by their driver's first system, then id, which is the same order when each code's matches carry
 * one system (a `system|code` value, a status), and a page without _sort promises none.
 * `alone` when it is the only filter besides `_project`: its window of index rows then holds the
 * page unless the whole match is small, so reading the whole match instead is cheap
 * (orderedMatchesPage). With other filters that could drop most of the window, the whole match of
 * a common code (50,000 rows, or every Observation's status) must not be de-duplicated: those
 * take growing windows, then the general statement (growingWindowPage).
 */
export async function tokenCodeDriver(search: DrivenSearch, filters: readonly Filter[], page: PageShape): Promise<TokenCodeDriver | undefined> {
  const count = (filter: Filter, bound: number): Promise<number> => codeRowsInProject(search, filter, bound);
  const code = await rarestTokenCode(filters, codeRowsCounted(page), count);
  if (!code) return undefined;
  const { filter: { name, value }, others } = code;
  return {
    matches: (ctx, window) => tokenCodeMatches(name, value, search.type, search.projectId, ctx, window),
    others,
    alone: others.every((other) => other.name === '_project'),
    holdsEveryRow: async (window) => (await count(code.filter, window)) < window,
  };
}

/** Whether a filter is a plain token parameter on one code (isOneTokenCode). */
export function isTokenCodeFilter(filter: Filter): boolean {
  return plainParameter(filter)?.type === 'token' && isOneTokenCode(filter.value);
}

/**
 * Of the filters on one token code, the one with the fewest index rows, and the other filters:
 * the rows a page is driven by, each probed against the others (`Observation?status=final&code=..`
 * reads the code's rows, not every final Observation's). An exact count, no statistics, and a
 * bounded one: the first code is counted up to `bound` rows (`count(filter, bound)`), each later
 * one only up to the fewest so far, since it drives only with fewer; ties keep the earlier
 * filter. One code is not counted. Undefined when no filter is one token code.
 */
export async function rarestTokenCode(
  filters: readonly Filter[],
  bound: number,
  count: (filter: Filter, bound: number) => Promise<number>,
): Promise<{ filter: Filter; others: Filter[] } | undefined> {
  const codes = filters.filter(isTokenCodeFilter);
  if (codes.length === 0) return undefined;
  let rarest = codes[0];
  if (codes.length > 1) {
    let fewest = await count(rarest, bound);
    for (const code of codes.slice(1)) {
      if (fewest === 0) break;
      const rows = await count(code, fewest);
      if (rows < fewest) [rarest, fewest] = [code, rows];
    }
  }
  return { filter: rarest, others: filters.filter((filter) => filter !== rarest) };
}
