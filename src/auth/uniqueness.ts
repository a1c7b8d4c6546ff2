import type { SqlExecutor } from '../db/database.js';
import { issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import type { WriteHook } from '../storage/write-hooks.js';

/**
 * Values that name one account server-wide, whatever project holds the resource:
 *
 * - `ProjectMembership.externalId`: SPEC 2.5 and 5 rule 7 say it "must be unique across all
 *   memberships" (it is matched against the `sub` of external tokens in every project);
 * - `User.email`, compared case-insensitively: password sign-in, token exchange and invites find
 *   the User by email across projects (accounts.ts findUserByEmail).
 *
 * Every write of these types checks, inside its own transaction, that no other live resource holds
 * the value. The check runs under a PostgreSQL advisory lock on the value (held until commit or
 * rollback) taken after the row is written, so of two transactions writing one value the second
 * waits for the first to end and then sees its row: concurrent writes cannot both pass. Repository
 * writes (REST, GraphQL) run it as the type's write hook; account writes of their own
 * (invite, $init, $clone) run the same hook (writeHookOf). A clash is 409 naming the field.
 *
 * Duplicates stored before this rule existed stay readable; the 401 of an ambiguous external
 * token (external.ts) still guards against them.
 */
interface UniqueField {
  resourceType: 'ProjectMembership' | 'User';
  /** FHIRPath of the field, for the OperationOutcome. */
  expression: string;
  /** The value to keep unique, normalised; undefined when the resource has none. */
  valueOf(resource: Resource): string | undefined;
  /** SQL over `resource` (alias-free) giving the normalised value; migration 0007 indexes it. */
  sql: string;
  /** What the value is called in messages. */
  label: string;
}

const EXTERNAL_ID: UniqueField = {
  resourceType: 'ProjectMembership',
  expression: 'ProjectMembership.externalId',
  valueOf: (resource) => (typeof resource.externalId === 'string' && resource.externalId !== '' ? resource.externalId : undefined),
  sql: `content->>'externalId'`,
  label: 'externalId',
};

const EMAIL: UniqueField = {
  resourceType: 'User',
  expression: 'User.email',
  valueOf: (resource) => (typeof resource.email === 'string' && resource.email !== '' ? resource.email.toLowerCase() : undefined),
  sql: `lower(content->>'email')`,
  label: 'email',
};

/**
 * Serialises the transactions that name one value of a field until they end. The key is the one
 * account writes already lock on before looking a User up by email (account-writes.ts userByEmail), so
 * an invite that takes it first takes it again here without waiting (advisory locks are reentrant).
 */
export async function lockValue(tx: SqlExecutor, key: string): Promise<void> {
  await tx.execute('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`flint:${key}`]);
}

export const lockKeys = {
  email: (email: string) => `user-email:${email.toLowerCase()}`,
  externalId: (externalId: string) => `membership-external-id:${externalId}`,
};

/** 409 naming the field; the other resource is not named (it may be in a project the caller cannot see). */
function taken(field: UniqueField, value: string): OperationOutcomeError {
  const text = `Another ${field.resourceType} already has ${field.label} "${value}": it must be unique across all projects`;
  return new OperationOutcomeError(
    outcome([issue('conflict', text, field.expression)]),
    409,
  );
}

/**
 * Throws 409 when a live resource other than `exceptId` holds the value. Call inside the write's
 * transaction; it takes the value's lock first.
 */
async function assertFree(tx: SqlExecutor, field: UniqueField, value: string, exceptId: string | undefined): Promise<void> {
  await lockValue(tx, field === EMAIL ? lockKeys.email(value) : lockKeys.externalId(value));
  // The type is written into the statement (a constant of ours) so that the partial indexes of
  // migration 0007 match even in a generic plan.
  const rows = await tx.query<{ id: string }>(
    `SELECT id FROM resource
     WHERE "resourceType" = '${field.resourceType}' AND NOT deleted AND ${field.sql} = $1 AND ($2::text IS NULL OR id <> $2::text)
     LIMIT 1`,
    [value, exceptId ?? null],
  );
  if (rows.length > 0) throw taken(field, value);
}

/** Before an invite writes anything: 409 when the externalId is already used (and it holds the lock). */
export function assertExternalIdFree(tx: SqlExecutor, externalId: string): Promise<void> {
  return assertFree(tx, EXTERNAL_ID, externalId, undefined);
}

/** Write hooks that keep a User's email and a membership's externalId unique (the composition root installs them). */
export const uniquenessWriteHooks: readonly (readonly [string, WriteHook])[] = [EXTERNAL_ID, EMAIL].map(
  (field) =>
    [
      field.resourceType,
      async (tx, change) => {
        const value = change.resource ? field.valueOf(change.resource) : undefined;
        if (value !== undefined) await assertFree(tx, field, value, change.id);
      },
    ] as const,
);
