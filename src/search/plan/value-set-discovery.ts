import type { OperationOutcomeError } from '../../fhir/outcome.js';
import { policyCriteria } from '../../identity/policy.js';
import { compileParameter, compileResolved } from '../query/conditions.js';
import { type CompileContext, type ValueSetMember } from '../query/conditions/types.js';
import { type Scope } from '../../storage/project-scope.js';
import { SqlArgs } from '../../db/sql-args.js';
import type { SearchServices } from '../search-services.js';
import { expandForSearch } from '../value-set-expansion.js';
import { usesValueSet, type RequestedFilter } from './filters.js';

export type ValueSets = Map<string, readonly ValueSetMember[] | OperationOutcomeError>;

/** A parameter that names value sets, and how to compile it (in a discovery context, whose value sets are collected). */
interface ValueSetUse {
  name: string;
  compile: (ctx: CompileContext) => string;
}

/**
 * The value sets named by `:in`/`:not-in` in the search's filters (`requested`, on `types`) and
 * in the caller's AccessPolicy criteria for `criteriaTypes` (search applies those too), each
 * expanded once, or undefined when none is named. Which URLs are needed comes from a discovery
 * pass that compiles those parameters with throwaway arguments: it sees through chains and
 * `_has`, and skips parameters that are invalid anyway (their own error is reported when the
 * search compiles them for real). Failures are kept per URL and raised by the parameter that uses
 * it, so lenient handling treats them like any other bad value. URLs in `known` are not expanded again.
 */
export async function expandValueSets(
  services: SearchServices,
  scope: Scope,
  criteriaTypes: readonly string[] | undefined,
  requested: { filters: readonly RequestedFilter[]; types: readonly string[] } | undefined,
  known?: CompileContext['valueSets'],
): Promise<ValueSets | undefined> {
  const uses = [...requestedUses(requested), ...criteriaUses(services, criteriaTypes)];
  if (uses.length === 0) return undefined;
  const urls = new Map<string, string>();
  for (const { name, compile } of uses) {
    const found = new Set<string>();
    const discovery: CompileContext = {
      args: new SqlArgs(),
      scope,
      fhirBase: services.config.fhirBaseUrl,
      depth: 0,
      wantedValueSets: found,
      parameters: services.parameters,
    };
    try {
      compile(discovery);
    } catch {
      // Reported when the parameter is compiled for the search.
    }
    for (const url of found) if (!urls.has(url) && !known?.has(url)) urls.set(url, name);
  }
  const expansions: ValueSets = new Map();
  for (const [url, name] of urls) expansions.set(url, await expandForSearch(services.primary ?? services.db, services.identity, url, name));
  return expansions;
}

function requestedUses(requested: { filters: readonly RequestedFilter[]; types: readonly string[] } | undefined): ValueSetUse[] {
  if (!requested) return [];
  const uses: ValueSetUse[] = [];
  for (const { name, value, resolved } of requested.filters) {
    // A name that does not resolve has no value set to expand: its error is the search's.
    if (!usesValueSet(name) || resolved.kind === 'unresolved') continue;
    uses.push({ name, compile: (ctx) => compileResolved(name, resolved, value, requested.types, 'r', ctx) });
  }
  return uses;
}

function criteriaUses(services: SearchServices, types: readonly string[] | undefined): ValueSetUse[] {
  return (types ?? []).flatMap((type) =>
    (policyCriteria(services.identity, type) ?? [])
      .filter(([name]) => usesValueSet(name))
      .map(([name, value]) => ({ name, compile: (ctx: CompileContext) => compileParameter(name, value, [type], 'r', ctx) })),
  );
}
