import { plainParameter, type Filter } from '../plan/filters.js';
import { isOneTokenCode, tokenCodeMatches, tokenCodeRowCount } from '../query/conditions/token.js';
import { freshContext, type DrivenSearch } from './driven.js';
import type { OrderedDriver } from './ordered-matches.js';

export interface TokenCodeDriver extends OrderedDriver {
  /** The only filter besides `_project`. */
  alone: boolean;
  /** Whether a window of this many index rows holds every row of the code. */
  holdsEveryRow: (window: number) => Promise<boolean>;
}

/**
 * The first token code among the filters (`Observation?code=http://loinc.org|8867-4`).
 * `alone` when it is the only filter besides `_project`: its window of index rows then holds the
 * page unless the whole match is small, so reading the whole match instead is cheap
 * (orderedMatchesPage). With other filters that could drop most of the window, the whole match of
 * a common code (50,000 rows, or every Observation's status) must not be de-duplicated: those
 * take growing windows, then the general statement (growingWindowPage).
 */
export function tokenCodeDriver(search: DrivenSearch, filters: readonly Filter[]): TokenCodeDriver | undefined {
  const code = tokenCodeFilter(filters);
  if (!code) return undefined;
  const { filter: { name, value }, others } = code;
  return {
    matches: (ctx, window) => tokenCodeMatches(name, value, search.type, search.projectId, ctx, window),
    others,
    alone: others.every((other) => other.name === '_project'),
    holdsEveryRow: async (window) => {
      const ctx = freshContext(search);
      const [row] = await search.services.db.query<{ n: number }>(tokenCodeRowCount(name, value, search.type, search.projectId, ctx, window), ctx.args.values);
      return row.n < window;
    },
  };
}

/** The first filter of the search on one token code (isOneTokenCode), and the others. */
export function tokenCodeFilter(filters: readonly Filter[]): { filter: Filter; others: Filter[] } | undefined {
  const at = filters.findIndex((filter) => plainParameter(filter)?.type === 'token' && isOneTokenCode(filter.value));
  return at < 0 ? undefined : { filter: filters[at], others: filters.filter((_, i) => i !== at) };
}
