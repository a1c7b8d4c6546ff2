import type { Filter } from '../plan/filters.js';
import { CHAIN_CANDIDATES_MAX, chainAt, chainCandidates, SORTED_CHAIN_CANDIDATES_MAX, type ChainCandidates, type ChainSearch } from './chain-driven.js';
import { testedOnResource } from './driven.js';

/** The filter whose matching resources drive a sorted page of a common chain, and those resources. */
export interface SortedChainDriver {
  filter: Filter;
  found: ChainCandidates;
}

/**
 * Of a sorted search's filters, the one whose index rows name the fewest resources, each read up
 * to SORTED_CHAIN_CANDIDATES_MAX (chainCandidates), and those resources: the candidates of a
 * sorted page of a chain to common targets once the walk or the windows of its sort parameter's
 * rows fell short. The other filters are read first, as plain index rows cost less to read than
 * the chain's references to its targets; each later one only up to the fewest so far (ties keep
 * the earlier), and the chain last, only when the fewest so far are more than its first read
 * found (it is known to have more). Undefined when none has so few: the general statement
 * answers. Without statistics that statement started from the chain's references (500,000 of
 * `subject:Patient.gender=female`) and ran past 30 s where, analyzed, it started from the rarest
 * filter's rows (`value-quantity=99.9`, 1,666) and probed the chain on each, as this does.
 */
export async function sortedChainDriver(search: ChainSearch, filters: readonly Filter[]): Promise<SortedChainDriver | undefined> {
  const at = chainAt(filters);
  if (at < 0) return undefined;
  let fewest: SortedChainDriver | undefined;
  let bound = SORTED_CHAIN_CANDIDATES_MAX;
  for (const filter of filters.filter((candidate, i) => i !== at && mayDrive(candidate))) {
    if (bound === 0) break;
    const found = await chainCandidates(search, filter, bound);
    if (!found?.complete) continue;
    fewest = { filter, found };
    bound = found.ids.length - 1;
  }
  if (bound <= CHAIN_CANDIDATES_MAX) return fewest;
  const found = await chainCandidates(search, filters[at], bound);
  return found?.complete ? { filter: filters[at], found } : fewest;
}

/** Whether a filter's index rows may be read as a page's candidates: not `_project` nor one tested on the resource row. */
function mayDrive(filter: Filter): boolean {
  return !testedOnResource(filter) && filter.resolved.kind !== 'chain' && filter.resolved.kind !== 'has';
}
