import type { Identity, RequestContext } from '../context.js';
import { Database, type SqlExecutor } from '../db/database.js';
import { errors, issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { OperationRequest } from '../operations/registry.js';
import { Membership } from '../terminology/membership.js';
import { findValueSet } from '../terminology/resources.js';
import type { ValueSetMember } from './query/conditions.js';

/**
 * Value sets for the token modifiers `:in` and `:not-in`: expanded through the terminology
 * service (the same membership engine as `$expand` and `$validate-code`), once per search, and
 * matched as a list of codes. The ValueSet is found by canonical URL (`|version` allowed) in the
 * caller's project, then among the shipped R4 value sets.
 */

/** Codes an expansion used by a search may have; a larger one is refused with 400 `too-costly`. */
export const MAX_VALUE_SET_CODES = 10_000;

/**
 * The members of the value set `url`, or the error to report for the parameter `name` that uses
 * it: `invalid` when it is unknown or cannot be expanded, `too-costly` when it is too large.
 */
export async function expandForSearch(
  db: SqlExecutor,
  identity: Identity,
  url: string,
  name: string,
): Promise<readonly ValueSetMember[] | OperationOutcomeError> {
  // The terminology services read the caller's project from the context and nothing else.
  const request: OperationRequest = { level: 'system', ctx: { identity } as RequestContext, db: terminologyDatabase(db) };
  try {
    const valueSet = await findValueSet(request.ctx, request.db, url);
    if (!valueSet) {
      return errors.invalid(`${name}: ValueSet ${url} not found (give the canonical URL of a ValueSet of this project or of FHIR R4)`, name);
    }
    const { members, total } = await new Membership(request).expand(valueSet, { offset: 0, count: MAX_VALUE_SET_CODES + 1 });
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
 * The terminology service wants a Database (it indexes shipped code systems on first use, in a
 * transaction of its own). A search running inside a write's transaction (AccessPolicy checks)
 * gets a stand-in whose transactions run in that transaction.
 */
function terminologyDatabase(db: SqlExecutor): Database {
  if (db instanceof Database) return db;
  const inTransaction = {
    query: db.query.bind(db),
    execute: db.execute.bind(db),
    transaction: <T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> => work(db),
  };
  return inTransaction as unknown as Database;
}
