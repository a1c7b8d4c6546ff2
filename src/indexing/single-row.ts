import { getStructureDefinition, isResourceType } from '../fhir/definitions.js';
import { fhirTypeName } from './element-types.js';
import { getIndexPlan, storedCodes } from './plan.js';

/**
 * Which built-in parameters store at most one index row per resource: a count of the resources
 * whose rows of such a parameter match needs no de-duplication (search/exact-count.ts), which
 * would otherwise sort or hash every match. Found from the definitions: the parameter has one term
 * on the type, a plain path (`Observation.status`) whose every element allows one value (max 1),
 * ending at an element all of whose types give one row of the parameter's kind (add-rows.ts: a
 * code one token row, a CodeableConcept one per coding, a Timing one date row per event). Stored
 * resources were validated, so an element with max 1 holds one value. Project parameters cannot
 * take a built-in's code (indexing/parameters.ts), so a built-in code's rows are its own.
 */

/** Per parameter kind, the element types add-rows.ts turns into one row at most. */
const ONE_ROW_TYPES: Readonly<Record<string, ReadonlySet<string>>> = {
  token: new Set(['code', 'boolean', 'id', 'string', 'uri', 'Coding', 'Identifier', 'ContactPoint']),
  date: new Set(['date', 'dateTime', 'instant', 'Period']),
  reference: new Set(['Reference', 'canonical', 'uri']),
  uri: new Set(['uri', 'url', 'canonical', 'oid', 'uuid']),
  string: new Set(['string', 'markdown']),
  number: new Set(['decimal', 'integer', 'positiveInt', 'unsignedInt']),
  quantity: new Set(['Quantity', 'Money']),
};

const PLAIN_PATH = /^[A-Za-z]+(\.[a-z][A-Za-z0-9]*)+$/;

const known = new Map<string, boolean>();

/** Whether the rows stored under built-in code `code` of `resourceType` are at most one per resource. */
export function storesOneRowAtMost(resourceType: string, code: string): boolean {
  const key = `${resourceType}|${code}`;
  let answer = known.get(key);
  if (answer === undefined) {
    answer = isResourceType(resourceType) && oneRowAtMost(resourceType, code);
    known.set(key, answer);
  }
  return answer;
}

function oneRowAtMost(resourceType: string, code: string): boolean {
  // A union parameter's values are also other codes' rows; a code stored under another's is not stored.
  const codes = storedCodes(resourceType, code);
  if (codes.length !== 1 || codes[0] !== code) return false;
  const param = getIndexPlan(resourceType).find((p) => p.code === code);
  const rowTypes = param && ONE_ROW_TYPES[param.type];
  if (!param || !rowTypes || param.terms.length !== 1) return false;
  const { expression } = param.terms[0];
  if (!PLAIN_PATH.test(expression) || !expression.startsWith(`${resourceType}.`)) return false;
  const types = singleValuedTypes(resourceType, expression);
  return types !== undefined && types.length > 0 && types.every((type) => rowTypes.has(type));
}

/**
 * The types of the element at `path` when it and every element above it allow one value at most
 * (a choice element `value[x]` named as `value`), else undefined.
 */
function singleValuedTypes(resourceType: string, path: string): string[] | undefined {
  const elements = getStructureDefinition(resourceType)?.snapshot?.element ?? [];
  const steps = path.split('.');
  let types: string[] | undefined;
  for (let end = 2; end <= steps.length; end++) {
    const prefix = steps.slice(0, end).join('.');
    const element = elements.find((e) => e.path === prefix) ?? (end === steps.length ? elements.find((e) => e.path === `${prefix}[x]`) : undefined);
    if (!element || element.contentReference || (element.max !== '1' && element.max !== '0')) return undefined;
    types = (element.type ?? []).map((type) => fhirTypeName(type.code));
  }
  return types;
}
