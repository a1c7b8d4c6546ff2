import type { SqlArgs } from '../db/sql-args.js';
import type { Identity } from '../identity/identity.js';

/**
 * Project isolation, in one place: which projects a caller reaches (a super admin every one, anyone
 * else their own), as a check on a row already read and as the SQL condition that keeps a statement
 * inside them. The store, its history and every search apply it through these functions.
 */

/** The caller's reach: their project, or every project for a super admin. */
export function scopeOf(identity: Identity): Scope {
  return { projectIds: identity.superAdmin ? undefined : [identity.projectId] };
}

/** The caller's reach, narrowed to `projectId` for a super admin; anyone else keeps their own project. */
export function narrowedScope(identity: Identity, projectId: string | undefined): Scope {
  return identity.superAdmin && projectId !== undefined ? { projectIds: [projectId] } : scopeOf(identity);
}

/** Whether a row of `projectId` is within the caller's reach. */
export function canSee(identity: Identity, projectId: string): boolean {
  return identity.superAdmin || projectId === identity.projectId;
}

/** Project scope of a resource alias: every project (super admin) or the listed ones. */
export interface Scope {
  /** undefined: every project. */
  projectIds: readonly string[] | undefined;
}

/** The SQL condition that keeps `alias` within the scope; undefined when the scope is every project. */
export function scopeSql(alias: string, column: string, scope: Scope, args: SqlArgs): string | undefined {
  if (scope.projectIds === undefined) return undefined;
  if (scope.projectIds.length === 1) return `${alias}."${column}" = ${args.add(scope.projectIds[0])}`;
  if (scope.projectIds.length === 0) return 'false';
  return `${alias}."${column}" IN (SELECT json_array_elements_text(${args.add(JSON.stringify(scope.projectIds))}::json))`;
}
