import type { Identity } from '../../identity/identity.js';
import { policyCriteria } from '../../identity/policy.js';
import type { Scope } from '../../storage/project-scope.js';
import type { WriteDependency } from '../../cache/search-cache.js';
import { usesValueSet, type Filter } from './filters.js';

/**
 * Whose writes can change the answers of a search (search-cache.ts), or undefined when they must
 * not be kept: a value set's expansion changes with terminology writes that are not resource
 * writes. A search of one or more named types whose parameters read only those types' own index
 * rows depends on writes of those types; one that follows references elsewhere (chains, _has), on
 * any write of the project. The caller's AccessPolicy criteria are parameters of the same search.
 */
export function writeDependency(
  identity: Identity,
  scope: Scope,
  typeList: readonly string[] | undefined,
  filters: readonly Filter[],
): WriteDependency | undefined {
  const criteria = (typeList ?? []).flatMap((type) => policyCriteria(identity, type) ?? []);
  const names = [...filters.map(({ name }) => name), ...criteria.map(([name]) => name)];
  if (names.some(usesValueSet)) return undefined;
  const ownRowsOnly = names.every((name) => !name.includes('.') && !name.startsWith('_has'));
  return { projectIds: scope.projectIds, types: ownRowsOnly ? typeList : undefined };
}
