import type { SummaryMode } from '../fhir/summary.js';
import type { OperationOutcomeIssue } from '../fhir/types.js';
import type { WriteDependency } from '../cache/search-cache.js';

/** What search() answers, transport-free: REST and GraphQL turn it into a Bundle or a Connection. */

export interface SearchOptions {
  /** `Prefer: handling=lenient`: unknown parameters and bad values are ignored and reported. */
  lenient?: boolean;
  /**
   * Matches without their JSON (`text` is ''): for callers that hold most of the versions already
   * (GraphQL on the embedded database, whose resource cache does), since sending a page of
   * resources is most of the embedded database's cost of a search. Included resources keep theirs.
   */
  withoutContent?: boolean;
  /**
   * Searches of StructureDefinition and SearchParameter also find the built-in definitions
   * (builtin-definitions.ts): what clients see; internal searches (exports, criteria) do not.
   */
  withBuiltins?: boolean;
}

/** A stored resource as the search returns it: the JSON text exactly as stored. */
export interface SearchRow {
  resourceType: string;
  id: string;
  projectId: string;
  versionId: string;
  lastUpdated: string;
  text: string;
}

export interface SearchTotal {
  value: number;
  /** True for a count, false for the planner's estimate. */
  exact: boolean;
}

export interface SearchResult {
  matches: SearchRow[];
  includes: SearchRow[];
  total?: SearchTotal;
  /** Problems ignored under lenient handling (reported in the Bundle as an outcome entry). */
  warnings: OperationOutcomeIssue[];
  summary: SummaryMode | undefined;
  elements: string | undefined;
  paging: Paging;
  /**
   * Whose writes can change this answer (matches, includes and total), when known and the answer
   * does not depend on terminology: a later page of a walk by cursor may then be read ahead and kept
   * until such a write is heard of (src/http/read-ahead.ts).
   */
  dependency?: WriteDependency;
}

export interface Paging {
  count: number;
  /** Cursor paging: the search is sorted by _lastUpdated ascending and _count >= 20. */
  cursorMode: boolean;
  offset: number;
  /** The cursor of this page, when the request had one. */
  cursor?: string;
  next?: { offset: number } | { cursor: string };
  previous?: { offset: number } | { cursor: string };
  /** The parameters of the search, as the links must repeat them (paging parameters removed). */
  params: [string, string][];
}
