import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { contextResolve } from './resolve.js';

/**
 * Evaluating one invariant's FHIRPath on one element instance with fhirpath.js. Each expression is
 * compiled once (per base type, which gives the engine the type of the context node) and kept for
 * the life of the process.
 */

/** What `%resource` and `%rootResource` are for the node evaluated. */
export interface ResourceContext {
  /** The resource the node is in (a contained resource for nodes inside it). */
  readonly resource: unknown;
  /** The resource that contains `resource`, or `resource` itself when it is not contained. */
  readonly rootResource: unknown;
}

/** true: holds; false: broken; undefined: the engine failed, so the invariant is unchecked here. */
export type Verdict = boolean | undefined;

type Compiled = (node: unknown, env: Record<string, unknown>) => unknown[];

const OPTIONS = {
  resolveInternalTypes: false,
  // ref-1 and dom-3 call trace(), which prints by default.
  traceFn: () => undefined,
  userInvocationTable: { resolve: contextResolve },
} as const;

const compiled = new Map<string, Compiled | null>();
const reported = new Set<string>();

/**
 * Evaluates `expression` on `node`, whose FHIR type (or backbone definition path) is `base`; ''
 * for a primitive value, which the engine then sees as a System value (fhirpath.js cannot take a
 * primitive FHIR type as base: it converts a decimal before it is ready to). An
 * invariant fails only when it evaluates to false: an empty result (e.g. comparing dates of
 * different precisions) does not prove it broken.
 */
export function evaluateInvariant(key: string, expression: string, base: string, node: unknown, context: ResourceContext): Verdict {
  const evaluate = compiledFor(key, expression, base);
  if (evaluate === undefined) return undefined;
  try {
    const result = evaluate(node, { resource: context.resource, rootResource: context.rootResource });
    return !result.some((value) => value === false || (value instanceof Boolean && !value.valueOf()));
  } catch (error) {
    reportOnce(key, expression, error);
    return undefined;
  }
}

function compiledFor(key: string, expression: string, base: string): Compiled | undefined {
  const cacheKey = `${base}\n${expression}`;
  let found = compiled.get(cacheKey);
  if (found === undefined) {
    try {
      const path = base === '' ? expression : { base, expression };
      found = fhirpath.compile(path, r4Model, OPTIONS) as unknown as Compiled;
    } catch (error) {
      reportOnce(key, expression, error);
      found = null;
    }
    compiled.set(cacheKey, found);
  }
  return found ?? undefined;
}

/** An invariant the engine cannot evaluate is treated as unchecked; said once per process, not per write. */
function reportOnce(key: string, expression: string, error: unknown): void {
  const id = `${key}: ${expression}`;
  if (reported.has(id)) return;
  reported.add(id);
  const reason = error instanceof Error ? error.message : String(error);
  process.emitWarning(`Invariant ${key} could not be evaluated and is treated as unchecked: ${reason}`, {
    code: 'FLINT_INVARIANT_UNCHECKED',
    detail: expression,
  });
}
