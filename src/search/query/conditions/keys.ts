import { isResourceType } from '../../../fhir/definitions.js';
import type { ResolvedParameter } from './types.js';
import { splitOr } from '../values.js';
import { namesTokenCode } from './token.js';

/** Parameters whose token values are identifiers: a value names one resource, or a few. */
const KEY_TOKEN_CODES = new Set(['identifier']);

/**
 * Whether `name=value` (`resolved`: its name on the searched types) selects by a key (ids,
 * references to given resources, identifiers, or a chain ending in one): it matches a handful of
 * resources whatever the value, so the plan that starts from it is the best plan for every value
 * (QueryOptions.planOnce).
 */
export function selectsByKey(name: string, value: string, resolved: ResolvedParameter): boolean {
  const values = splitOr(value);
  if (resolved.kind === 'has' || values.some((v) => v === '')) return false;
  if (resolved.kind === 'chain') {
    const rest = name.slice(resolved.dot + 1);
    return rest === '_id' || (KEY_TOKEN_CODES.has(rest) && values.every(namesTokenCode));
  }
  // Two modifiers: not a key (nor a valid parameter).
  if (name.split(':').length > 2) return false;
  switch (resolved.kind) {
    case 'id':
      return resolved.modifier === undefined;
    case 'reference-identifier':
      return values.every(namesTokenCode);
    case 'indexed': {
      const { code, modifier, param } = resolved;
      if (param.type === 'reference') return modifier === undefined || isResourceType(modifier);
      return param.type === 'token' && modifier === undefined && KEY_TOKEN_CODES.has(code) && values.every(namesTokenCode);
    }
    default:
      return false;
  }
}
