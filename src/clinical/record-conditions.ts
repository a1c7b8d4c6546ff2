import { CLINICAL_DATE_PARAMETER } from '../fhir/clinical-dates.js';
import { patientCompartmentTypes } from '../fhir/compartments.js';
import { getResourceTypes } from '../fhir/definitions.js';
import type { Identity } from '../identity/identity.js';
import { policyAllowsType } from '../identity/policy.js';
import { compileParameter } from '../search/query/conditions.js';
import type { CompileContext } from '../search/query/conditions/types.js';

/**
 * The SQL conditions of a patient's record (Patient/$everything) on a resource aliased `r`:
 * which types each part may hold, the clinical dates, `_since`, and the caller's AccessPolicy
 * and SMART scopes, compiled by the search engine so they cannot disagree with a search.
 */

/** What the client narrowed the record to. */
export interface RecordFilters {
  /** `_type`: only these types (undefined: every type). */
  readonly types?: readonly string[];
  /** `_since`: meta.lastUpdated at or after. */
  readonly since?: string;
  /** `start`/`end`: care dates, on the types that have a clinical date. */
  readonly start?: string;
  readonly end?: string;
}

/**
 * Types that are server bookkeeping, never part of a clinical record even when a resource of
 * the record points at one (a Provenance naming a ClientApplication as its agent), nor of a bulk
 * export: accounts, credentials and secrets (a Bot's code often holds the keys of the systems it
 * calls; SPEC 4.7 leaves a Bot's secrets out of a clone), jobs.
 */
export const SERVER_TYPES: ReadonlySet<string> = new Set(['Project', 'ProjectMembership', 'ClientApplication', 'User', 'Login', 'AccessPolicy', 'AsyncJob', 'Bot']);

let inCompartment: ReadonlySet<string> | undefined;

/** The types that can be in a patient's compartment (the R4 Patient CompartmentDefinition). */
export function compartmentTypes(): ReadonlySet<string> {
  return (inCompartment ??= new Set(patientCompartmentTypes()));
}

/**
 * The types a part of the record may hold for this caller: compartment types for the matches,
 * the other types for the referenced resources; narrowed by `_type` and by what the policy
 * allows. Undefined when nothing narrows the part (no `_type`, every type allowed).
 */
export function partTypes(identity: Identity, part: 'match' | 'include', filters: RecordFilters): readonly string[] | undefined {
  const ofPart = (type: string) => compartmentTypes().has(type) === (part === 'match') && !SERVER_TYPES.has(type);
  const candidates = filters.types ?? getResourceTypes();
  const allowed = candidates.filter((type) => ofPart(type) && policyAllowsType(identity, type));
  if (!filters.types && part === 'match' && allowed.length === compartmentTypes().size) return undefined;
  return allowed;
}

/** `column IN (types)` (a part with no type at all is not read). */
export function typeListCondition(column: string, types: readonly string[], ctx: CompileContext): string {
  return `${column} IN (${types.map((type) => ctx.args.add(type)).join(', ')})`;
}

/**
 * `start`/`end` on the types that have a clinical date (src/fhir/clinical-dates.ts): the date
 * must overlap [start, end] (`ge` start, `le` end, as search compares ranges); a resource of such
 * a type without the date is left out. Other types are not restricted.
 */
export function clinicalDateConditions(filters: RecordFilters, types: readonly string[] | undefined, ctx: CompileContext): string[] {
  if (filters.start === undefined && filters.end === undefined) return [];
  const conditions: string[] = [];
  for (const [type, code] of Object.entries(CLINICAL_DATE_PARAMETER)) {
    if (types && !types.includes(type)) continue;
    const within = [
      ...(filters.start !== undefined ? [compileParameter(code, `ge${filters.start}`, [type], 'r', ctx)] : []),
      ...(filters.end !== undefined ? [compileParameter(code, `le${filters.end}`, [type], 'r', ctx)] : []),
    ];
    conditions.push(`(r."resourceType" <> ${ctx.args.add(type)} OR (${within.join(' AND ')}))`);
  }
  return conditions;
}

/** `_since` on `r`. */
export function sinceCondition(filters: RecordFilters, ctx: CompileContext): string[] {
  return filters.since === undefined ? [] : [`r."lastUpdated" >= ${ctx.args.add(filters.since, 'timestamptz')}`];
}
