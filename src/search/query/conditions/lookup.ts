import { getSearchParametersFor, isResourceType, type SearchParameter } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import { isIndexedType } from '../../../indexing/add-rows.js';
import type { ProjectParameters } from '../../../indexing/parameters.js';
import { getIndexPlan, storedCode, storedCodes } from '../../../indexing/plan.js';

/**
 * The definition of a parameter on every one of `types` (same kind everywhere), or a 400: a
 * built-in one, or one of the searching project's own (`parameters`). A built-in parameter whose
 * rows are stored under another's code (`phonetic`, stored as `name`: indexing/plan.ts) is that
 * other's definition, so searches and sorts read the rows under its code.
 */
export function findParameter(code: string, types: readonly string[], name = code, parameters?: ProjectParameters): SearchParameter {
  let found: SearchParameter | undefined;
  for (const type of types) {
    const stored = storedCode(type, code);
    const param = getSearchParametersFor(type).find((p) => p.code === stored) ?? parameters?.find(type, code);
    if (!param) {
      throw errors.invalid(`Unknown search parameter "${name}" for ${type}`, name);
    }
    if (found && found.type !== param.type) {
      throw errors.invalid(`Search parameter "${name}" has different types on ${types.join(', ')}`, name);
    }
    if (found && found.code !== param.code) {
      throw errors.invalid(`Search parameter "${name}" cannot be searched on ${types.join(', ')} together: search each type on its own`, name);
    }
    found ??= param;
  }
  if (!found) throw errors.invalid(`Unknown search parameter "${name}"`, name);
  return found;
}

/**
 * The codes whose rows a search of parameter `code` on `types` reads: its stored code, and for a
 * union parameter the codes of the parameters holding its other values (indexing/union-rows.ts).
 * Types whose codes differ (`name` of Patient and Person: Person has no `family`) are searched
 * with every type's codes, so a code must store no rows on a type it is not one of the codes of
 * there; else a 400 as for parameters of different codes.
 */
export function parameterCodes(code: string, types: readonly string[], name = code, parameters?: ProjectParameters): readonly string[] {
  const lists = types.map((type) => storedCodes(type, code));
  if (lists.length === 1) return lists[0];
  const all = [...new Set(lists.flat())];
  for (const [at, type] of types.entries()) {
    const stray = all.find((other) => !lists[at].includes(other) && (getIndexPlan(type).some((p) => p.code === other) || parameters?.find(type, other)));
    if (stray !== undefined) throw errors.invalid(`Search parameter "${name}" cannot be searched on ${types.join(', ')} together: search each type on its own`, name);
  }
  return all;
}

/** Whether a parameter can be searched (indexed kinds plus the resource columns); composites: findCompositePlan. */
export function isSearchable(param: SearchParameter): boolean {
  return param.code === '_id' || param.code === '_lastUpdated' || (param.expression !== undefined && isIndexedType(param.type));
}

/**
 * A 400 unless the reference parameter `code` (`param`, in the searched parameter `name`) can
 * point at one of `types`: a chain, `_has` or type modifier through a type it cannot point at would
 * only ever find nothing, which hides the mistake. A definition that names no target (a project's
 * own parameter may not) allows every type.
 */
export function checkTargetTypes(name: string, code: string, param: SearchParameter, types: readonly string[]): void {
  const targets: string[] = (param.target ?? []).filter((t) => t !== null && isResourceType(t));
  if (targets.length === 0 || types.some((t) => targets.includes(t))) return;
  throw errors.invalid(`In "${name}", ${code} refers to ${[...targets].sort().join(', ')}, never to ${types.join(' or ')}`, name);
}
