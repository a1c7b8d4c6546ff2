import type { CodeSystemProperty as FhirCodeSystemProperty, WithRequired } from '../fhir/resources.js';
import type { Identity } from '../identity/identity.js';

/** A property a code system defines (`CodeSystem.property`, stored with the system row); `code` is 1..1. */
export type CodeSystemProperty = WithRequired<FhirCodeSystemProperty, 'code'>;

export interface ConceptDetail {
  code: string;
  display: string | null;
  definition: string | null;
  abstract: boolean;
  inactive: boolean;
  designations: { language: string | null; useSystem: string | null; useCode: string | null; useDisplay: string | null; value: string }[];
  properties: { property: string; type: string; value: string }[];
  parents: string[];
  children: string[];
}

export interface SystemRef {
  id: string;
  url: string;
  version: string;
  name: string | null;
  properties: CodeSystemProperty[];
  resourceId: string | null;
}

/** A code system held in memory: its concepts in code system order, by code, and its hierarchy. */
export interface LoadedSystem {
  readonly concepts: readonly ConceptDetail[];
  readonly byCode: ReadonlyMap<string, ConceptDetail>;
  /** Parents of every code that has some (also codes that are no concepts of the system). */
  readonly parentsOf: ReadonlyMap<string, readonly string[]>;
  /** Children of every code that has some (also codes that are no concepts of the system). */
  readonly childrenOf: ReadonlyMap<string, readonly string[]>;
  /** Codes at or below a code, computed on demand (in-memory.ts) and kept while the system is. */
  readonly below: Map<string, ReadonlySet<string>>;
}

/**
 * The one membership engine of value sets: $validate-code asks whether one code is a member,
 * $expand lists the members; both evaluate the same SQL predicate built from `compose`, so they
 * cannot disagree. Rules (R4 ValueSet.compose): a code is a member when some include matches it
 * and no exclude does; an include matches a code of its `system` that is in its concept list (or
 * any code when there is none) and passes every filter, and is in every value set it imports.
 * A code system held in memory (cache.ts) is evaluated there by the same rules (in-memory.ts), for
 * both operations alike; filters only SQL evaluates send both to SQL.
 */
export interface ComposeFilter {
  property: string;
  op: string;
  value: string;
}

export interface ComposeElement {
  system?: string;
  version?: string;
  concept?: { code: string; display?: string }[];
  filter?: ComposeFilter[];
  valueSet?: string[];
}

/**
 * Who a terminology lookup serves: the project whose own code systems and value sets come first
 * (then FHIR's shipped ones). A request context is one; the caches are synced once per caller
 * object, and `requestId` absent means no cache (a lookup inside a write's transaction).
 */
export interface TerminologyCaller {
  readonly identity: Pick<Identity, 'projectId'>;
  readonly requestId?: string;
}
