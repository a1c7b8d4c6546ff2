import { plainParameter, type Filter } from '../plan/filters.js';
import { stringPrefixMatches, stringPrefixRange, type PrefixRange } from '../query/conditions/string.js';
import type { DrivenSearch } from './driven.js';
import type { OrderedDriver } from './ordered-matches.js';

/** The PrefixRange of a filter that is a plain one-value string prefix (`Patient?name=smi`), if it is one. */
export function prefixRangeOf(filter: Filter): PrefixRange | undefined {
  const param = plainParameter(filter);
  return param?.type === 'string' ? stringPrefixRange(param.code, filter.value) : undefined;
}

/** The first filter that is a one-value string prefix, read in the string index's order (orderedMatchesPage), if any. */
export function prefixDriver(search: DrivenSearch, filters: readonly Filter[]): OrderedDriver | undefined {
  for (const [at, filter] of filters.entries()) {
    const range = prefixRangeOf(filter);
    if (range) {
      return {
        matches: (ctx, window) => stringPrefixMatches(range, search.type, search.projectId, ctx, window),
        others: filters.filter((_, i) => i !== at),
      };
    }
  }
  return undefined;
}
