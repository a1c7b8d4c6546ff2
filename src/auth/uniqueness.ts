import type { SqlExecutor } from '../db/database.js';
import { issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import type { WriteHook } from '../storage/write-hooks.js';

/**
 * A User or ProjectMembership that names a project (`project`) names the one that stores it: 400
 * naming the field otherwise, for every writer (super admins and the server's own account writes
 * included), checked in the write's transaction.
 *
 * Values that name one account, whatever project holds the resource:
 *
 * - `ProjectMembership.externalId`: SPEC 2.5 and 5 rule 7 say it "must be unique across all
 *   memberships" (it is matched against the `sub` of external tokens in every project);
 * - `User.email`, compared case-insensitively, within the User's scope as Medplum scopes it: once
 *   among server-wide Users (no `project`: practitioners, admins) and once among the Users scoped
 *   to each project (`project` set: a patient signed up or invited to it). Sign-in, token exchange
 *   and invites find the User by email and project (accounts.ts findUserByEmail).
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
  /** SQL over `resource` (alias-free) giving the normalised value; migration 0007 (externalId) and 0033 (email, scope) index it. */
  sql: string;
  /** What the value is called in messages. */
  label: string;
  /** Where the value must be unique: the scope of the resource ('' for all projects), and its SQL. */
  scope?: { of(resource: Resource): string; sql: string };
  /** The project the resource names as its own ('' for none): it must be the project that stores it. */
  home(resource: Resource): string;
}

const projectOf = (resource: Resource): string => (resource.project as { reference?: string } | undefined)?.reference ?? '';

const EXTERNAL_ID: UniqueField = {
  resourceType: 'ProjectMembership',
  expression: 'ProjectMembership.externalId',
  valueOf: (resource) => (typeof resource.externalId === 'string' && resource.externalId !== '' ? resource.externalId : undefined),
  sql: `content->>'externalId'`,
  label: 'externalId',
  // A membership grants access to the project that stores it (sign-in lands there): naming another
  // would send a sign-in that names the other project into this one.
  home: projectOf,
};

const EMAIL: UniqueField = {
  resourceType: 'User',
  expression: 'User.email',
  valueOf: (resource) => (typeof resource.email === 'string' && resource.email !== '' ? resource.email.toLowerCase() : undefined),
  sql: `lower(content->>'email')`,
  label: 'email',
  scope: {
    of: projectOf,
    sql: `coalesce(content->'project'->>'reference', '')`,
  },
  // One project's admin could otherwise take an email in the scope of a project it does not administer.
  home: projectOf,
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
function taken(field: UniqueField, value: string, scope: string): OperationOutcomeError {
  const where = scope === '' ? (field.scope ? 'among server-wide users (those without project)' : 'across all projects') : `among the users of ${scope}`;
  const text = `Another ${field.resourceType} already has ${field.label} "${value}": it must be unique ${where}`;
  return new OperationOutcomeError(
    outcome([issue('conflict', text, field.expression)]),
    409,
  );
}

/** 400: the resource names a project other than the one it is written in. */
function foreignProject(field: UniqueField, named: string, projectId: string): OperationOutcomeError {
  const what = field.resourceType === 'User' ? 'a project-scoped User' : 'a ProjectMembership';
  const text = `${field.resourceType}.project is ${named}, but the ${field.resourceType} is written in Project/${projectId}: ${what} names the project that holds it`;
  return new OperationOutcomeError(outcome([issue('invalid', text, `${field.resourceType}.project`)]), 400);
}

/**
 * Throws 409 when a live resource other than `exceptId` holds the value. Call inside the write's
 * transaction; it takes the value's lock first.
 */
async function assertFree(tx: SqlExecutor, field: UniqueField, value: string, scope: string, exceptId: string | undefined): Promise<void> {
  // One lock per value whatever the scope: coarser than needed, and never wrong.
  await lockValue(tx, field === EMAIL ? lockKeys.email(value) : lockKeys.externalId(value));
  // The type is written into the statement (a constant of ours) so that the partial indexes
  // match even in a generic plan.
  const rows = await tx.query<{ id: string }>(
    `SELECT id FROM resource
     WHERE "resourceType" = '${field.resourceType}' AND NOT deleted AND ${field.sql} = $1 AND ${field.scope?.sql ?? "''"} = $3
       AND ($2::text IS NULL OR id <> $2::text)
     LIMIT 1`,
    [value, exceptId ?? null, scope],
  );
  if (rows.length > 0) throw taken(field, value, scope);
}

/** Before an invite writes anything: 409 when the externalId is already used (and it holds the lock). */
export function assertExternalIdFree(tx: SqlExecutor, externalId: string): Promise<void> {
  return assertFree(tx, EXTERNAL_ID, externalId, '', undefined);
}

/** Write hooks that keep a User's email and a membership's externalId unique (the composition root installs them). */
export const uniquenessWriteHooks: readonly (readonly [string, WriteHook])[] = [EXTERNAL_ID, EMAIL].map(
  (field) =>
    [
      field.resourceType,
      async (tx, change) => {
        const resource = change.resource;
        if (!resource) return;
        const home = field.home(resource);
        if (home !== '' && home !== `Project/${change.projectId}`) throw foreignProject(field, home, change.projectId);
        const scope = field.scope?.of(resource) ?? '';
        const value = field.valueOf(resource);
        if (value !== undefined) await assertFree(tx, field, value, scope, change.id);
      },
    ] as const,
);
