import { policyCriteria } from '../identity/policy.js';
import type { ResourceKey } from '../storage/types.js';
import { MAX_COUNT, search, searchServicesFor, type SearchContext } from '../search/service.js';

/**
 * AccessPolicy criteria judged by the search engine, as the guarded repository applies them to
 * reads: a resource is within them when a search of its `_id` under the caller's identity finds it.
 */

/** Which of `ids` meet the criteria of `context`'s identity for `type`, each with the versionId the search judged. */
export async function idsWithinCriteria(context: SearchContext, type: string, ids: readonly string[]): Promise<Map<string, string>> {
  const within = new Map<string, string>();
  const chunkSize = Math.min(MAX_COUNT, context.config.searchMaxOrValues);
  for (let start = 0; start < ids.length; start += chunkSize) {
    const chunk = ids.slice(start, start + chunkSize);
    const result = await search(searchServicesFor(context), type, [
      ['_id', chunk.join(',')],
      ['_count', String(chunk.length)],
    ]);
    for (const row of result.matches) within.set(row.id, row.versionId);
  }
  return within;
}

/**
 * For each version of a type the criteria of `context`'s identity narrow: the versionId its
 * criteria search saw, or undefined when outside them (one search per such type). Versions of
 * other types are absent.
 */
export async function criteriaVerdicts<K extends ResourceKey>(context: SearchContext, versions: readonly K[]): Promise<Map<K, string | undefined>> {
  const verdicts = new Map<K, string | undefined>();
  for (const type of new Set(versions.map((version) => version.resourceType))) {
    if (!policyCriteria(context.identity, type)) continue;
    const ofType = versions.filter((version) => version.resourceType === type);
    const within = await idsWithinCriteria(context, type, ofType.map((version) => version.id));
    for (const version of ofType) verdicts.set(version, within.get(version.id));
  }
  return verdicts;
}
