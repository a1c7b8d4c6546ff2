import type { AccessRule, Identity, PolicyInteraction } from '../identity/identity.js';
import { errors } from '../fhir/outcome.js';
import { scopeRefusal } from '../identity/scope-access.js';
import type { Permission } from '../identity/scopes.js';
import { accountTypeRefusal, policyNarrowsSomeType, ruleAllows, ruleFor } from '../identity/policy.js';

/**
 * Types only project admins (or super admins) may create, change or delete. A Bot runs as its own
 * membership with the Project's secrets in `event.secrets`, which only admins see: a member who
 * could write or deploy one could read them through it, and could hide any Binary from other
 * members by naming it as the Bot's code.
 */
const ADMIN_TYPES = new Set(['ProjectMembership', 'ClientApplication', 'AccessPolicy', 'User', 'Bot']);
/**
 * Types written only by the server itself or a super admin. A UserSecurityRequest carries the
 * secret of a password reset or an invitation: project admins read it (Medplum's policy for them
 * makes it read-only), and one they could write would let them set a user's password.
 */
const SYSTEM_TYPES = new Set(['Login', 'Project', 'AsyncJob', 'UserSecurityRequest']);

const WRITES = new Set<PolicyInteraction>(['create', 'update', 'delete']);

/** Whether the identity may perform the interaction on resources of a type; throws 403 otherwise. */
export function assertTypeAccess(identity: Identity, resourceType: string, interaction: PolicyInteraction): void {
  const rule = listedRule(identity, resourceType);
  if (rule && !ruleAllows(rule, interaction)) {
    throw errors.forbidden(
      rule.interactions
        ? `Your access policy does not allow the ${interaction} interaction on ${resourceType} resources`
        : `Your access policy allows ${resourceType} resources read-only`,
    );
  }
  if (!WRITES.has(interaction) || identity.superAdmin) return;
  if (SYSTEM_TYPES.has(resourceType)) {
    throw errors.forbidden(
      resourceType === 'Project'
        ? 'Only a super admin can write Project resources: use Project/$init to create a project'
        : `${resourceType} resources are written by the server only`,
    );
  }
  if (ADMIN_TYPES.has(resourceType) && !identity.projectAdmin) {
    throw errors.forbidden(`Only project admins can create or change ${resourceType} resources`);
  }
}

/**
 * The identity's policy rule for the type (undefined without a policy); 403 when the type is hidden
 * from its kind of account, or the policy has no rule for it (nor `*`).
 */
function listedRule(identity: Identity, resourceType: string): AccessRule | undefined {
  const hidden = accountTypeRefusal(identity, resourceType);
  if (hidden) throw errors.forbidden(hidden);
  const rule = ruleFor(identity, resourceType);
  if (rule === null) throw errors.forbidden(`Your access policy does not allow ${resourceType} resources`);
  return rule;
}

/** Throws 403 naming the missing scope when the token's SMART scopes do not grant `permission` on the type. */
export function assertScope(identity: Identity, resourceType: string, permission: Permission): void {
  if (!identity.scopes) return;
  const refusal = scopeRefusal(identity, resourceType, permission);
  if (refusal) throw errors.forbidden(`${refusal} (${describePermission(permission)} ${resourceType})`);
}

const PERMISSION_NAMES: Record<Permission, string> = { c: 'to create', r: 'to read', u: 'to update', d: 'to delete', s: 'to search' };
const describePermission = (permission: Permission) => PERMISSION_NAMES[permission];

/** The SMART permission each REST interaction needs on its type (SMART App Launch 2.0, scopes). */
const INTERACTION_PERMISSION: Record<string, Permission> = {
  read: 'r',
  vread: 'r',
  'history-instance': 'r',
  'history-type': 'r',
  'search-type': 's',
  'search-system': 's',
  create: 'c',
  update: 'u',
  patch: 'u',
  delete: 'd',
};

/** What a route tells access control about the request it serves. */
export interface RouteAccess {
  /** The route's interaction (`read`, `search-type`, `create`...); operations and Bundles have none here. */
  readonly interaction?: string;
  /** A conditional interaction (`PUT Type?search`, `If-None-Exist`) also searches the type. */
  readonly conditional?: boolean;
}

const TYPE_PATH = /^([A-Z][A-Za-z]+)(?:\/|$)/;

/** The `_type` values of a system search. */
function searchedTypes(query: URLSearchParams): string[] {
  return query.getAll('_type').flatMap((value) => value.split(',')).map((t) => t.trim()).filter(Boolean);
}

/**
 * AccessPolicy and SMART scopes at the router, for every FHIR interaction whatever serves it
 * (search, history, operations, Bundle entries): the type in the path (below the FHIR base), or
 * each `_type` of a system search, must be allowed, and the scopes must grant the interaction's
 * permission on it. A system search without `_type` under a policy or scopes would reach every
 * type, so it must name them. Writes are checked again by the repository (read-only types).
 */
export function assertRouteAccess(identity: Identity, path: string, query: URLSearchParams, route: RouteAccess = {}): void {
  if (identity.scopes) assertRouteScopes(identity, path, query, route);
  // Without a policy, account types are still hidden (policy.ts, accountTypeRefusal).
  if (identity.superAdmin) return;
  const match = TYPE_PATH.exec(path);
  if (match) {
    assertRouteType(identity, match[1], route);
    return;
  }
  // The base path is also where batch and transaction Bundles are posted: their entries are checked each.
  if (path === '' && route.interaction === 'search-system') {
    const types = searchedTypes(query);
    if (types.length === 0 && identity.accessPolicy) assertMaySearchEveryType(identity);
    for (const type of types) assertTypeAccess(identity, type, 'search');
  }
}

/** The read interactions of routes; writes are checked by the repository, operations by the reads and writes they make. */
const ROUTE_READS: Record<string, PolicyInteraction> = {
  read: 'read',
  vread: 'vread',
  'history-instance': 'history',
  'history-type': 'history',
  'search-type': 'search',
};

function assertRouteType(identity: Identity, resourceType: string, route: RouteAccess): void {
  const read = route.interaction === undefined ? undefined : ROUTE_READS[route.interaction];
  if (read) assertTypeAccess(identity, resourceType, read);
  // Without a policy, an operation on an account type hidden from the caller may still serve the
  // caller itself (a user's own $update-email): the reads and writes it makes are checked instead.
  else if (identity.accessPolicy) listedRule(identity, resourceType);
  if (route.conditional) assertTypeAccess(identity, resourceType, 'search');
}

/**
 * A system search without `_type` reaches every type, so the policy must allow every type (`*`)
 * and narrow none: criteria are applied per named type, and a search of no named type would show
 * the resources outside them.
 */
function assertMaySearchEveryType(identity: Identity): void {
  if (!identity.accessPolicy!.resources.some((r) => r.resourceType === '*')) {
    throw errors.forbidden('Your access policy limits the resource types you may search: name them with _type');
  }
  if (policyNarrowsSomeType(identity)) {
    throw errors.forbidden('Your access policy narrows resource types by criteria or a compartment: name the types you search with _type');
  }
}

function assertRouteScopes(identity: Identity, path: string, query: URLSearchParams, route: RouteAccess): void {
  const permission = route.interaction === undefined ? undefined : INTERACTION_PERMISSION[route.interaction];
  if (!permission) return;
  const type = TYPE_PATH.exec(path)?.[1];
  if (type) {
    assertScope(identity, type, permission);
    if (route.conditional) assertScope(identity, type, 's');
    return;
  }
  if (route.interaction !== 'search-system') return;
  const types = searchedTypes(query);
  if (types.length === 0) {
    const everyType = identity.scopes!.scopes.some((s) => s.type === '*' && s.permissions.has('s') && s.context !== 'patient' && s.params.length === 0);
    if (!everyType) throw errors.forbidden('Your SMART scopes limit the resource types you may search: name them with _type');
  }
  for (const searched of types) assertScope(identity, searched, 's');
}
