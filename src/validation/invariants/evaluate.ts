import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { isResourceType } from '../../fhir/definitions.js';
import { compileFast, FALLBACK, type FastInvariant } from './fast.js';
import { contextResolve } from './resolve.js';

/**
 * Evaluating one invariant's FHIRPath on one element instance: first by the small interpreter of
 * fast.ts, and with fhirpath.js when that one cannot tell. Each expression is compiled once (per
 * base type, which gives the engines the type of the context node) and kept for the life of the
 * process.
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

interface Engines {
  readonly fast: FastInvariant | undefined;
  /** fhirpath.js's, compiled on first need; null when it cannot compile the expression. */
  slow: Compiled | null | undefined;
}

/** By expression, then by base: the key an invariant's text already is, without building strings per call. */
const compiled = new Map<string, Map<string, Engines>>();
const reported = new Set<string>();
let fastPathEnabled = true;

/** For tests that check both engines agree; the fast path is on unless turned off here. */
export function setFastPath(enabled: boolean): void {
  fastPathEnabled = enabled;
}

/**
 * The base to give for a primitive of FHIR type `code`: the type, except decimal, which
 * fhirpath.js cannot take as a base (it converts the value before it is ready to), so a decimal
 * is given as a System value ('').
 */
export function primitiveBase(code: string): string {
  return code === 'decimal' ? '' : code;
}

/**
 * Evaluates `expression` on `node`, whose FHIR type (or backbone definition path) is `base`. An
 * invariant fails only when it evaluates to false: an empty result (e.g. comparing dates of
 * different precisions) does not prove it broken.
 */
export function evaluateInvariant(key: string, expression: string, base: string, node: unknown, context: ResourceContext): Verdict {
  const engines = enginesFor(expression, base);
  if (engines.fast && fastPathEnabled) {
    try {
      return holds(engines.fast(node, context.resource));
    } catch (error) {
      if (error !== FALLBACK) reportOnce(key, expression, error);
    }
  }
  engines.slow ??= compileSlow(key, expression, base);
  if (engines.slow === null) return undefined;
  try {
    return holds(engines.slow(node, { resource: context.resource, rootResource: context.rootResource }));
  } catch (error) {
    reportOnce(key, expression, error);
    return undefined;
  }
}

function holds(result: readonly unknown[]): boolean {
  return !result.some((value) => value === false || (value instanceof Boolean && !value.valueOf()));
}

function enginesFor(expression: string, base: string): Engines {
  let byBase = compiled.get(expression);
  if (byBase === undefined) {
    byBase = new Map();
    compiled.set(expression, byBase);
  }
  let found = byBase.get(base);
  if (found === undefined) {
    const resourceType = !base.includes('.') && isResourceType(base) ? base : undefined;
    found = { fast: base === '' ? undefined : compileFast(expression, base, resourceType), slow: undefined };
    byBase.set(base, found);
  }
  return found;
}

function compileSlow(key: string, expression: string, base: string): Compiled | null {
  try {
    const path = base === '' ? expression : { base, expression };
    return fhirpath.compile(path, r4Model, OPTIONS) as unknown as Compiled;
  } catch (error) {
    reportOnce(key, expression, error);
    return null;
  }
}

/** The text of the information issue `$validate` shows for an invariant the engine could not evaluate. */
export function uncheckedText(key: string): string {
  return `${key}: not checked here; the FHIRPath engine could not evaluate it on this element`;
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
