import { randomUUID } from 'node:crypto';
import type { Identity } from '../identity/identity.js';
import { Database, type SqlExecutor } from '../db/database.js';
import { errors, issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import { requestCache, type TerminologyCache } from '../terminology/cache.js';
import { Membership } from '../terminology/membership.js';
import { findValueSet } from '../terminology/resources.js';
import { terminologyDatabase } from '../terminology/in-transaction.js';
import type { TerminologyCaller } from '../terminology/types.js';
import type { ValueSetMember } from './query/conditions/types.js';

/**
 * Value sets for the token modifiers `:in` and `:not-in`: expanded through the terminology
 * service (the same membership engine as `$expand` and `$validate-code`) and matched as a list of
 * codes. The ValueSet is found by canonical URL (`|version` allowed) in the caller's project, then
 * among the shipped R4 value sets.
 *
 * Expansions are kept in memory per (project, canonical url with its version), least recently
 * used dropped first (ExpansionMemory), and stay exact the way the terminology caches do
 * (src/terminology/cache.ts): the memory belongs to one terminology revision. Every ValueSet or
 * CodeSystem write, `$import` and clone raises the revision in its transaction; the next search
 * syncs the terminology cache (the process generation, and on PostgreSQL the revision row, so
 * writes of other servers count too) and finds a fresh, empty memory. A search running inside a
 * write's transaction (AccessPolicy checks) expands without any cache, as before.
 */

/** Codes an expansion used by a search may have; a larger one is refused with 400 `too-costly`. */
export const MAX_VALUE_SET_CODES = 10_000;
/** Codes kept in memory across the expansions of one database (an answer that is an error counts 1). */
export const MAX_CACHED_EXPANSION_CODES = 100_000;
/** Expansions kept in memory per database at most. */
export const MAX_CACHED_EXPANSIONS = 1_000;

type Expansion = readonly ValueSetMember[] | OperationOutcomeError;

/**
 * The members of the value set `url`, or the error to report for the parameter `name` that uses
 * it: `invalid` when it is unknown or cannot be expanded, `too-costly` when it is too large.
 */
export async function expandForSearch(db: SqlExecutor, identity: Identity, url: string, name: string): Promise<Expansion> {
  if (!(db instanceof Database)) return expand(db, { identity }, url, name);
  // A caller of its own: the terminology cache is synced once per caller, so each search (each
  // value set of it) checks that what is cached is still current.
  const caller: TerminologyCaller = { identity, requestId: `search-${randomUUID()}` };
  const cache = await requestCache(caller, db);
  if (!cache) return expand(db, { identity }, url, name);
  const memory = await expansionMemory(cache);
  return memory.get(`${identity.projectId}|${url}`, () => expand(db, caller, url, name));
}

/** Expands `url` for a search; a caller with a `requestId` uses the synced terminology cache. */
async function expand(db: SqlExecutor, caller: TerminologyCaller, url: string, name: string): Promise<Expansion> {
  const terminologyDb = terminologyDatabase(db);
  try {
    const valueSet = await findValueSet(caller, terminologyDb, url);
    if (!valueSet) {
      return errors.invalid(`${name}: ValueSet ${url} not found (give the canonical URL of a ValueSet of this project or of FHIR R4)`, name);
    }
    const { members, total } = await new Membership(caller, terminologyDb).expand(valueSet, { offset: 0, count: MAX_VALUE_SET_CODES + 1 });
    if (total > MAX_VALUE_SET_CODES || members.length > MAX_VALUE_SET_CODES) {
      return new OperationOutcomeError(
        outcome([
          issue(
            'too-costly',
            `${name}: ValueSet ${url} has ${total > MAX_VALUE_SET_CODES ? total : 'more than ' + MAX_VALUE_SET_CODES} codes; ` +
              `searches expand value sets of at most ${MAX_VALUE_SET_CODES} codes. Use a narrower value set or search by code`,
            name,
          ),
        ]),
        400,
      );
    }
    return members.map((member) => ({ system: member.system, code: member.code }));
  } catch (error) {
    if (error instanceof OperationOutcomeError && error.status < 500) {
      const cause = error.outcome.issue[0]?.details?.text ?? 'it cannot be expanded';
      const tooLarge = /more than \d+ codes/.test(cause);
      return new OperationOutcomeError(
        outcome([
          issue(
            tooLarge ? 'too-costly' : 'invalid',
            tooLarge
              ? `${name}: ValueSet ${url} has more than ${MAX_VALUE_SET_CODES} codes; searches expand value sets of at most ${MAX_VALUE_SET_CODES} codes`
              : `${name}: ValueSet ${url} cannot be expanded: ${cause}`,
            name,
          ),
        ]),
        400,
      );
    }
    throw error;
  }
}

/**
 * The expansions of one terminology revision of one database, least recently used first. Answers
 * in progress are shared (concurrent searches of one value set expand it once); an expansion that
 * fails with an exception (a 500) is not kept. Errors a client gets (unknown or too large value
 * set) are kept like expansions: a write that could change them raises the revision too.
 */
export class ExpansionMemory {
  private readonly entries = new Map<string, { answer: Promise<Expansion>; codes: number }>();
  private codes = 0;

  get(key: string, compute: () => Promise<Expansion>): Promise<Expansion> {
    const hit = this.entries.get(key);
    if (hit) {
      // Most recently used last: eviction takes the first.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.answer;
    }
    const entry = { answer: compute(), codes: 1 };
    this.entries.set(key, entry);
    this.codes += entry.codes;
    entry.answer.then(
      (answer) => {
        if (this.entries.get(key) !== entry) return;
        const codes = Array.isArray(answer) ? Math.max(1, answer.length) : 1;
        this.codes += codes - entry.codes;
        entry.codes = codes;
        this.evict(key);
      },
      () => this.remove(key, entry),
    );
    this.evict(key);
    return entry.answer;
  }

  /** Expansions held (tests). */
  get size(): number {
    return this.entries.size;
  }

  /** Drops the least recently used entries (never `keep`, just computed) beyond the bounds. */
  private evict(keep: string): void {
    for (const [key, entry] of this.entries) {
      if (this.codes <= MAX_CACHED_EXPANSION_CODES && this.entries.size <= MAX_CACHED_EXPANSIONS) break;
      if (key !== keep) this.remove(key, entry);
    }
  }

  private remove(key: string, entry: { codes: number }): void {
    if (this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    this.codes -= entry.codes;
  }
}

/**
 * The expansion memory of the revision the terminology cache was just synced to: kept by the
 * cache among its resolved urls, which it replaces whenever terminology changes, so a change always
 * leaves the next search an empty memory and an expansion still running for an older revision
 * finishes into a memory nobody reads any more.
 */
function expansionMemory(cache: TerminologyCache): Promise<ExpansionMemory> {
  return cache.resolved('SearchExpansions', async () => new ExpansionMemory());
}
