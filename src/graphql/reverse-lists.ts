import { assertScope, assertTypeAccess } from '../access/type-access.js';
import { getResourceTypes, getSearchParametersFor, isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { MAX_COUNT, MAX_OFFSET } from '../search/service.js';
import type { FieldResolver, GraphQLContext } from './context.js';
import type { ReverseQuery } from './loaders.js';
import { codesOf, rawParams, type Args } from './search-arguments.js';

/** Reverse references: `Patient { ObservationList(_reference: subject) }`, batched per level (loaders.ts). */

/** Target type → the types with a reference search parameter that may point at it. */
export function reverseReferences(): Map<string, Set<string>> {
  const map = new Map<string, Set<string>>();
  for (const source of getResourceTypes()) {
    for (const param of getSearchParametersFor(source)) {
      if (param.type !== 'reference') continue;
      for (const target of param.target ?? []) {
        // null: a target without a value (only an extension in `_target`) points at no type.
        if (target === null || !isResourceType(target)) continue;
        let sources = map.get(target);
        if (!sources) map.set(target, (sources = new Set()));
        sources.add(source);
      }
    }
  }
  return map;
}

/**
 * `SList(_reference: param, _params: [...], ...)` under a resource: the search
 * `S?<param>=<Type>/<id>&<_params>`. `_params` takes what it takes on the top-level `SList` (REST
 * parameters as in a URL; result parameters refused). The lists of one execution level with the same
 * arguments are batched (loaders.ts): one search for all parents in the common case.
 */
export function reverseListResolver(source: string): FieldResolver {
  return async (parent: Resource, args: Args, context: GraphQLContext) => {
    if (!parent.id) return [];
    assertTypeAccess(context.requestContext.identity, source, 'search');
    assertScope(context.requestContext.identity, source, 's');
    const params = rawParams(args._params);
    const query: ReverseQuery = {
      source,
      code: referenceCode(source, args._reference),
      ...(params.length > 0 ? { params } : {}),
      count: boundedInt(args._count, '_count', MAX_COUNT),
      offset: boundedInt(args._offset, '_offset', MAX_OFFSET),
      sort: typeof args._sort === 'string' ? args._sort : undefined,
    };
    const resources = await context.loaders.reverse(query, `${parent.resourceType}/${parent.id}`);
    return resources.map((resource) => context.loaders.remember(resource));
  };
}

/** An optional integer argument from 0 to `max`, refused otherwise with the search service's wording. */
function boundedInt(value: unknown, name: string, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw errors.invalid(`${name} must be an integer from 0 to ${max}, not ${String(value)}`, name);
  }
  return value;
}

/** The `SReferenceParam` value as a search parameter code, whether the enum's internal value is the code or its name. */
function referenceCode(source: string, value: unknown): string {
  const name = String(value);
  const code = codesOf(source).get(name) ?? name;
  const param = getSearchParametersFor(source).find((candidate) => candidate.code === code);
  if (!param || param.type !== 'reference') throw errors.invalid(`${name} is not a reference search parameter of ${source}`, '_reference');
  return code;
}
