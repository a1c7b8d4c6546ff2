import type { Config } from '../config.js';
import type { Identity } from '../identity/identity.js';
import type { SqlExecutor } from '../db/database.js';
import type { Reader } from '../db/replicas.js';
import type { ProjectParameters } from '../indexing/parameters.js';
import type { SearchCache } from '../cache/search-cache.js';

/** The settings a search reads. */
export type SearchConfig = Pick<Config, 'fhirBaseUrl' | 'accurateCountThreshold'> &
  Partial<Pick<Config, 'accurateCountOverThreshold'>> &
  SearchLimits;

/** The sizes a search may have (docs/search.md#limits). */
export type SearchLimits = Pick<Config, 'searchMaxValueLength' | 'searchMaxParameters' | 'searchMaxOrValues'>;

/** What a search runs with: where its statements go, who asks, and what it may keep between requests. */
export interface SearchServices {
  db: SqlExecutor;
  /**
   * Where reads that fill this server's caches go (a project's SearchParameters, which writes index
   * by too; value set expansions), when `db` is a read replica: an older answer must not be kept.
   */
  primary?: SqlExecutor;
  identity: Identity;
  config: SearchConfig;
  /** The searching project's own SearchParameters (src/indexing/parameters.ts); search() reads them when absent. */
  parameters?: ProjectParameters;
  /** Exact counts kept until a write could change them (search-cache.ts); absent: every count is taken anew. */
  searchCache?: SearchCache;
  /** `db` is a transaction: a statement that fails aborts it, so none may be retried or answered otherwise. */
  inTransaction?: true;
}

/** The parts of a request a search needs (a RequestContext has them all). */
export interface SearchContext {
  /** The primary. */
  readonly database: SqlExecutor;
  /** Where reads go (a read replica that has the caller's writes, or the primary); absent: `database`. */
  readonly reads?: { reader(): Reader };
  /** The transaction the request's statements join (a transaction Bundle), which searches join too. */
  readonly transaction?: SqlExecutor;
  readonly identity: Identity;
  readonly config: SearchConfig;
  readonly searchCache?: SearchCache;
}

/** Where a caller's searches deliberately differ from a request's. */
export interface SearchServicesOptions {
  /** Exact counts whatever ACCURATE_COUNT_THRESHOLD says: a measure is a count. */
  readonly exactCounts?: boolean;
  /**
   * Above the threshold, the estimate even where the server refuses (ACCURATE_COUNT_OVER_THRESHOLD):
   * for a total the client did not ask for by name (a GraphQL connection's `count`).
   */
  readonly estimateOverThreshold?: boolean;
  /**
   * Statements go to this transaction, a write's own check before its commit: answers kept from
   * before the write would not show it, and an answer the write shows must not outlive a rollback,
   * so none is read or kept.
   */
  readonly transaction?: SqlExecutor;
  /** On the primary whatever the request's reads use: the search decides a write (a conditional write). */
  readonly onPrimary?: boolean;
}

/** The services every search of a request runs with, built the same way for REST, GraphQL, operations and access checks. */
export function searchServicesFor(ctx: SearchContext, options: SearchServicesOptions = {}): SearchServices {
  const config: SearchConfig = {
    fhirBaseUrl: ctx.config.fhirBaseUrl,
    accurateCountThreshold: options.exactCounts ? Number.MAX_SAFE_INTEGER : ctx.config.accurateCountThreshold,
    accurateCountOverThreshold: options.estimateOverThreshold ? 'estimate' : ctx.config.accurateCountOverThreshold,
    searchMaxValueLength: ctx.config.searchMaxValueLength,
    searchMaxParameters: ctx.config.searchMaxParameters,
    searchMaxOrValues: ctx.config.searchMaxOrValues,
  };
  const transaction = options.transaction ?? ctx.transaction;
  if (transaction) return { db: transaction, identity: ctx.identity, config, inTransaction: true };
  const reader = options.onPrimary || !ctx.reads ? undefined : ctx.reads.reader();
  return {
    db: reader?.db ?? ctx.database,
    primary: reader?.replica ? ctx.database : undefined,
    identity: ctx.identity,
    config,
    // A replica may not have replayed a write this server has already heard of (search-cache.ts
    // trusts "commit, then tell"): its counts are neither read from the cache nor kept in it.
    searchCache: reader?.replica ? undefined : ctx.searchCache,
  };
}
