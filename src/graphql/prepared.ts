import type { GraphQLParams } from 'graphql-yoga';
import type { CompiledQuery } from 'graphql-jit';

/**
 * Queries a client repeats, answered without yoga's per-request machinery. Once a query text has
 * run compiled through yoga at the system endpoint (so it parsed and passed validation, limits
 * included, against the full schema), what remains for the next request with the same text is:
 * build the context (authentication), run the compiled function, write the JSON. yoga's plugin
 * chain around those steps is a sizeable share of the cost of a query for one Patient (measured:
 * see bench/RESULTS.md).
 *
 * Recorded only are operations whose later runs need none of the plugins' execution hooks: not at
 * the instance level (its root is read per request), no `_count` from a variable (checked per
 * request against the limits), no FHIR shaping directive (the result is reshaped after
 * execution). The prepared path gives up, and yoga answers the request from the start, whenever
 * the answer could differ from yoga's: parameters yoga would check or refuse, a failure to build
 * the context, variables that do not coerce, or any error in the result (errors are masked, logged
 * and ordered by yoga's plugins). Queries have no side effects, so running one again is safe.
 * test/graphql/fast-path.test.ts compares both ways; every compiled-equality test runs a query a
 * third time, prepared.
 */
export interface PreparedOperation {
  readonly compiled: CompiledQuery;
}

/** Prepared operations kept at most; a server that sees more starts over. */
const MAX_PREPARED = 1_000;

const KNOWN_PARAMS = new Set(['query', 'variables', 'operationName', 'extensions']);

export class PreparedOperations {
  private readonly byText = new Map<string, PreparedOperation>();

  get size(): number {
    return this.byText.size;
  }

  record(query: string, operationName: string | null | undefined, operation: PreparedOperation): void {
    const key = keyOf(query, operationName);
    if (this.byText.has(key)) return;
    if (this.byText.size >= MAX_PREPARED) this.byText.clear();
    this.byText.set(key, operation);
  }

  /** The prepared operation for parameters yoga would accept as they are; undefined otherwise. */
  find(params: GraphQLParams): PreparedOperation | undefined {
    if (typeof params.query !== 'string') return undefined;
    const { operationName, variables, extensions } = params;
    if (operationName != null && typeof operationName !== 'string') return undefined;
    if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined;
    // Extensions may carry persisted-query or other protocol requests: yoga's to interpret.
    if (extensions != null) return undefined;
    for (const name of Object.keys(params)) if (!KNOWN_PARAMS.has(name)) return undefined;
    return this.byText.get(keyOf(params.query, operationName));
  }
}

function keyOf(query: string, operationName: string | null | undefined): string {
  return `${operationName ?? ''}\u0000${query}`;
}
