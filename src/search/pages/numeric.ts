import { plainParameter, type Filter } from '../plan/filters.js';
import { numericRangeMatches, numericRangesExist, numericRangeTable } from '../query/conditions/number-quantity.js';
import { freshContext, loneFilter, type DrivenSearch } from './driven.js';
import type { OrderedDriver } from './ordered-matches.js';

/**
 * A number or quantity comparison (`Observation?value-quantity=gt60`) when it is the search's
 * only filter besides `_project`, read like a lone token code (orderedMatchesPage) when no row of
 * the parameter in the project holds a Range (`unranged`, one probe of the partial index on the
 * highs): by least matching value, then id.
 */
export function numericDriver(search: DrivenSearch, filters: readonly Filter[]): (OrderedDriver & { unranged: () => Promise<boolean> }) | undefined {
  const lone = loneFilter(filters);
  if (!lone) return undefined;
  const { filter: { name, value }, others } = lone;
  const param = plainParameter(lone.filter);
  const table = param && numericRangeTable(param.type, value);
  if (!table) return undefined;
  return {
    matches: (ctx, window) => numericRangeMatches(table, name, value, search.type, search.projectId, ctx, window),
    others,
    unranged: async () => {
      const ctx = freshContext(search);
      const [row] = await search.services.db.query<{ ranged: boolean }>(numericRangesExist(table, name, search.type, search.projectId, ctx), ctx.args.values);
      return !row.ranged;
    },
  };
}
