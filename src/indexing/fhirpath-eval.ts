import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { fhirTypeName } from './element-types.js';
import type { Evaluator } from './fast-path.js';
import { referencedStub } from './references.js';
import type { TypedValue } from './typed-value.js';

/**
 * Full FHIRPath through fhirpath.js, for the expressions the fast path does not handle
 * (`exists() and ...`, `iif(...)`, `resolve().resourceType`, indexers, ...).
 */

interface ResourceNodeLike {
  data: unknown;
  getTypeInfo(): { name?: string; namespace?: string } | undefined;
  constructor: { makeResNode?: (ctx: unknown, data: unknown, ...rest: null[]) => unknown };
}

function isResourceNode(value: unknown): value is ResourceNodeLike {
  return typeof value === 'object' && value !== null && 'data' in value && 'getTypeInfo' in value;
}

/**
 * `resolve()` without fetching: fhirpath.js's own resolve() is async and fetches over HTTP. This one
 * returns a stand-in `{resourceType, id}` read from the reference text, which is all that
 * `resolve() is Patient` and `resolve().resourceType` need. It builds ResourceNodes through the
 * input node's class (fhirpath.js does not export it) so that `is` sees the resource type.
 */
const resolveByReference = {
  fn: function (this: unknown, collection: unknown[]): unknown[] {
    const out: unknown[] = [];
    for (const item of collection) {
      const stub = referencedStub(isResourceNode(item) ? item.data : item);
      const makeResNode = isResourceNode(item) ? item.constructor.makeResNode : undefined;
      if (stub && makeResNode) out.push(makeResNode(this, stub, null, null, null, null));
    }
    return out;
  },
  arity: { 0: [] },
  internalStructures: true,
};

const OPTIONS = {
  resolveInternalTypes: false,
  userInvocationTable: { resolve: resolveByReference },
} as const;

/** Plain JavaScript values from computed results (booleans, numbers, FP_Decimal, FP_DateTime). */
function computedValue(result: unknown): TypedValue | undefined {
  let value = result;
  if (value instanceof Boolean || value instanceof Number || value instanceof String) value = value.valueOf();
  switch (typeof value) {
    case 'boolean':
      return { value, type: 'boolean' };
    case 'number':
      return { value, type: Number.isInteger(value) ? 'integer' : 'decimal' };
    case 'string':
      return { value, type: 'string' };
    case 'object': {
      // fhirpath.js's own decimal and date types print as their FHIRPath literal.
      if (value instanceof fhirpath.FP_Decimal) return { value: String(value), type: 'decimal' };
      const name = value?.constructor?.name ?? '';
      if (/FP_(DateTime|Date|Instant)/.test(name)) return { value: String(value), type: 'dateTime' };
      return undefined;
    }
    default:
      return undefined;
  }
}

function typedValue(result: unknown): TypedValue | undefined {
  if (!isResourceNode(result)) return computedValue(result);
  // Decimal elements come back as fhirpath.js decimals; rows want the JSON number.
  const data = result.data instanceof fhirpath.FP_Decimal ? result.data.toNumber() : result.data;
  if (data === null || data === undefined) return undefined;
  const info = result.getTypeInfo();
  // System.Object is what fhirpath.js says for elements its R4 model does not know (admin types).
  const known = info?.name && info.name !== 'Object' ? info.name : undefined;
  return { value: data, type: known && (info?.namespace === 'System' ? fhirTypeName(`System.${known}`) : known) };
}

/**
 * fhirpath.js evaluator for `expression`, or undefined when fhirpath.js cannot parse it. Evaluation
 * errors give no values, unless `rethrow` (for tests comparing engines).
 */
export function compileFhirPath(expression: string, rethrow = false): Evaluator | undefined {
  let compiled: (resource: unknown) => unknown[];
  try {
    compiled = fhirpath.compile(expression, r4Model, OPTIONS) as (resource: unknown) => unknown[];
  } catch {
    return undefined;
  }
  return (resource) => {
    let results: unknown[];
    try {
      results = compiled(resource);
    } catch (error) {
      // fhirpath.js throws on data the expression did not expect (e.g. `as` on several values).
      if (rethrow) throw error;
      return [];
    }
    const out: TypedValue[] = [];
    for (const result of results) {
      const item = typedValue(result);
      if (item) out.push(item);
    }
    return out;
  };
}
