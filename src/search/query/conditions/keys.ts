import { isResourceType, type SearchParameter } from '../../../fhir/definitions.js';
import type { ProjectParameters } from '../../parameters.js';
import { splitOr } from '../values.js';
import { findParameter } from './lookup.js';
import { namesTokenCode } from './token.js';

/** Parameters whose token values are identifiers: a value names one resource, or a few. */
const KEY_TOKEN_CODES = new Set(['identifier']);

/**
 * Whether `name=value` selects by a key (ids, references to given resources, identifiers, or a
 * chain ending in one): it matches a handful of resources whatever the value, so the plan that
 * starts from it is the best plan for every value (QueryOptions.planOnce). Invalid parameters are
 * not keys (compiling them reports the error).
 */
export function selectsByKey(name: string, value: string, types: readonly string[], parameters?: ProjectParameters): boolean {
  if (name.startsWith('_has:')) return false;
  const values = splitOr(value);
  if (values.some((v) => v === '')) return false;
  const dot = name.indexOf('.');
  if (dot > 0) {
    const rest = name.slice(dot + 1);
    return rest === '_id' || (KEY_TOKEN_CODES.has(rest) && values.every(namesTokenCode));
  }
  const [code, modifier, ...more] = name.split(':');
  if (more.length > 0) return false;
  if (code === '_id') return modifier === undefined;
  let param: SearchParameter;
  try {
    param = findParameter(code, types, name, parameters);
  } catch {
    return false;
  }
  if (param.type === 'reference') {
    if (modifier === 'identifier') return values.every(namesTokenCode);
    return modifier === undefined || isResourceType(modifier);
  }
  return param.type === 'token' && modifier === undefined && KEY_TOKEN_CODES.has(code) && values.every(namesTokenCode);
}
