import type { OperationOutcomeError } from '../../../fhir/outcome.js';
import type { SearchParameter } from '../../../fhir/definitions.js';
import type { ProjectParameters } from '../../../indexing/parameters.js';
import type { Scope } from '../../../storage/project-scope.js';
import type { SqlArgs } from '../../../db/sql-args.js';

/** The types the condition compiler and its per-kind files share. */

export interface CompileContext {
  args: SqlArgs;
  scope: Scope;
  /** The server's FHIR base, to read absolute references to this server as local ones. */
  fhirBase: string;
  /** Nesting depth of chains and `_has`, for unique aliases and a limit. */
  depth: number;
  /**
   * Expansions of the value sets named by `:in`/`:not-in`, by the URL as written (expanded once
   * per search, src/search/plan/value-set-discovery.ts), or the error that expanding gave.
   */
  valueSets?: ReadonlyMap<string, readonly ValueSetMember[] | OperationOutcomeError>;
  /** Set during the discovery pass: URLs of value sets the search needs, collected instead of compiled. */
  wantedValueSets?: Set<string>;
  /** The SearchParameters of the searching project (src/indexing/parameters.ts), beside the built-in ones. */
  parameters?: ProjectParameters;
  /**
   * Told of every "some index row matches" condition built (exact counts from the index tables and
   * key-driven pages use it). A condition at depth 0 whose SQL starts with EXISTS is exactly that test.
   */
  onRows?: (rows: IndexRowsCondition) => void;
  /**
   * onRows is told only whether a condition is index rows, and reads none of them (a chain probed
   * per resource asks it of its target's condition): the condition is compiled as without onRows.
   */
  rowsUnread?: boolean;
  /**
   * For onRows when the search is not scoped to one project: the SQL expression of the one project
   * a statement reads at a time (a column of its outer row, pages/chain-driven.ts), in which a
   * chain's rows are reported (the rows of one project serve the project-first indexes).
   */
  rowsProject?: string;
  /**
   * The conditions are tested on each of a few candidate rows (pages/driven.ts): their index-row
   * tests end in `OFFSET 0`, which keeps PostgreSQL from reading every row of the value into a hash
   * or a join instead of probing the index once per candidate. With statistics older than the
   * data it believed a common code had a handful of rows and hashed all 50,000 of them for a page.
   */
  perRow?: boolean;
  /**
   * Whether the caller may read a type (its AccessPolicy and SMART scopes): the types a chain or
   * `_has` looks into must be readable, or a search would tell what the caller may not read
   * (which Patients have an Observation of a code, what a Patient's name is). Unset: every type
   * (the server's own searches, and the policy's own criteria).
   */
  mayRead?: (type: string) => boolean;
  /**
   * The caller's AccessPolicy criteria and SMART scopes' conditions of a type as one SQL condition
   * on `alias`, compiled with `ctx`; undefined when the type is not narrowed. Chains and `_has`
   * test them on the resources they look into: a type the caller may read only in part would
   * otherwise tell about the rest (the name of a Patient of another organization, through its
   * Observations). A callback because the criteria are compiled in search/plan, above this layer.
   * Unset: nothing is narrowed (the server's own searches, and the policy's own criteria).
   */
  criteriaOf?: (type: string, alias: string, ctx: CompileContext) => string | undefined;
}

/** `EXISTS (row of table with code and condition)`, the shape of a plain parameter's condition. */
export interface IndexRowsCondition {
  /** The rows read: an index table, or for a union parameter a UNION ALL of its codes' rows of it (rowsOfCodes). */
  table: string;
  /** The index table itself. */
  indexTable: string;
  /** The placeholder holding the parameter's code. */
  codeArg: string;
  /** The condition on the row, over the columns of `alias`. */
  condition: string | undefined;
  /** IndexedHint: a condition that `condition` implies, for reading the rows alone. */
  indexed?: IndexedHint;
  alias: string;
  depth: number;
}

/**
 * A condition on an index row, implied by the row's own condition, that one index serves better
 * than any other (a one-day date: the GiST index on the row's range). A source reading the rows
 * alone leads with it and hides the rest from index matching; without statistics PostgreSQL
 * otherwise chose among indexes by their leading columns (project, type, code) and tested the
 * value on every row of the code. A function: its arguments are added only when it is used.
 */
export type IndexedHint = (alias: string) => string;

/** One code of a value set expansion. */
export interface ValueSetMember {
  system: string;
  code: string;
}

/** compileParameter's signature, for the kinds that compile parameters of other resources (chains, `_has`). */
export type CompileParameter = (name: string, value: string, types: readonly string[], alias: string, ctx: CompileContext) => string;

/**
 * Wraps a condition on an index row in the EXISTS over the parameter's rows of the resource.
 * `point`: the condition fixes every column of the table's value index before resourceId (a token
 * `system|code` or `|code`), so that index finds the resource's matching row, if any, in one seek
 * (rowsExist).
 */
export type RowsOf = (condition: string | undefined, indexed?: IndexedHint, point?: boolean) => string;

/** A parameter name resolved against the searched types: which kind compiles it, with its definition where it has one. */
export type ResolvedParameter =
  | { readonly kind: 'has' }
  | { readonly kind: 'filter' }
  | { readonly kind: 'chain'; readonly dot: number }
  | { readonly kind: 'id' | 'lastUpdated' | 'project'; readonly modifier: string | undefined }
  | { readonly kind: 'composite'; readonly code: string; readonly modifier: string | undefined }
  | { readonly kind: 'reference-identifier'; readonly code: string; readonly param: SearchParameter }
  | {
      readonly kind: 'indexed';
      readonly code: string;
      /** The codes whose rows it reads (parameterCodes): `code`, and more for a union parameter. */
      readonly codes: readonly string[];
      readonly modifier: string | undefined;
      readonly param: SearchParameter;
    };
