import type { Identity } from './identity.js';
import type { Permission, ResourceScope } from './scopes.js';

/** Search parameters that must all hold; a list of them is a union (any one group may hold). */
export type CriteriaGroup = readonly (readonly [string, string])[];

/** The scopes of the identity that grant `permission` on `type` (before the patient context). */
function scopesGranting(identity: Identity, type: string, permission: Permission): readonly ResourceScope[] {
  return identity.scopes!.scopes.filter((s) => (s.type === '*' || s.type === type) && s.permissions.has(permission));
}

/** Patient scopes need the launch patient: without one they grant nothing. */
function usable(identity: Identity, scopes: readonly ResourceScope[]): readonly ResourceScope[] {
  return identity.launch?.patient ? scopes : scopes.filter((s) => s.context !== 'patient');
}

/**
 * Why the token's scopes refuse `permission` on `type`, or undefined when they allow it (or the
 * token has no resource scopes: the membership's access applies unchanged).
 */
export function scopeRefusal(identity: Identity, type: string, permission: Permission): string | undefined {
  if (!identity.scopes) return undefined;
  const granting = scopesGranting(identity, type, permission);
  if (usable(identity, granting).length > 0) return undefined;
  if (granting.length > 0) {
    return `This token's patient/ scopes need a patient context, and it has none: sign in with launch/patient as a Patient user, or use user/ scopes`;
  }
  // A client's own token holds system/ scopes only, a user's token user/ and patient/ ones.
  const needed = identity.scopes.scopes.some((s) => s.context === 'system')
    ? `system/${type}.${permission}`
    : `patient/${type}.${permission} or user/${type}.${permission}`;
  return `This token's scopes do not allow it: requires scope ${needed}`;
}

/** Whether the scopes allow `permission` on `type` at all (true without resource scopes). */
export function scopeAllows(identity: Identity, type: string, permission: Permission): boolean {
  return scopeRefusal(identity, type, permission) === undefined;
}

/**
 * What the scopes that grant `permission` on `type` let through, as criteria: undefined when one
 * of them has no condition (or there are no resource scopes), else the union of their groups (a
 * granular scope's parameters, a patient scope's `_compartment=Patient/<launch patient>`); an
 * empty list lets nothing through.
 */
export function scopeCriteria(identity: Identity, type: string, permission: Permission): readonly CriteriaGroup[] | undefined {
  if (!identity.scopes) return undefined;
  const groups: CriteriaGroup[] = [];
  for (const scope of usable(identity, scopesGranting(identity, type, permission))) {
    const group = scope.context === 'patient' ? [...scope.params, ['_compartment', `Patient/${identity.launch!.patient!}`] as const] : scope.params;
    if (group.length === 0) return undefined;
    groups.push(group);
  }
  return groups;
}

/** The permission whose scopes narrow the searches an identity runs (its reads by id use `r`). */
export function scopeUseOf(identity: Identity): Permission {
  return identity.scopeUse ?? 's';
}
