import { getSearchParametersFor, type SearchParameter } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import { isIndexedType } from '../../../indexing/add-rows.js';
import type { ProjectParameters } from '../../../indexing/parameters.js';

/**
 * The definition of a parameter on every one of `types` (same kind everywhere), or a 400: a
 * built-in one, or one of the searching project's own (`parameters`).
 */
export function findParameter(code: string, types: readonly string[], name = code, parameters?: ProjectParameters): SearchParameter {
  let found: SearchParameter | undefined;
  for (const type of types) {
    const param = getSearchParametersFor(type).find((p) => p.code === code) ?? parameters?.find(type, code);
    if (!param) {
      throw errors.invalid(`Unknown search parameter "${name}" for ${type}`, name);
    }
    if (found && found.type !== param.type) {
      throw errors.invalid(`Search parameter "${name}" has different types on ${types.join(', ')}`, name);
    }
    found ??= param;
  }
  if (!found) throw errors.invalid(`Unknown search parameter "${name}"`, name);
  return found;
}

/** Whether a parameter can be searched (indexed kinds plus the resource columns); composites: findCompositePlan. */
export function isSearchable(param: SearchParameter): boolean {
  return param.code === '_id' || param.code === '_lastUpdated' || (param.expression !== undefined && isIndexedType(param.type));
}
