import type { AccessRule, Identity, PolicyInteraction } from './identity.js';
import { scopeAllows, scopeCriteria, scopeUseOf, type CriteriaGroup } from './scope-access.js';

/*
 * The caller's AccessPolicy, read the way search applies it: which types it allows, and the
 * search criteria (`Patient?organization=Organization/123`) that narrow a type.
 */

/**
 * Medplum's protected types: only super admins read or write them, whatever a policy names. A
 * Login holds a sign-in's secrets (its code, refresh secret, PKCE challenge); the server reads its
 * own through system access.
 */
const SUPER_ADMIN_TYPES: ReadonlySet<string> = new Set(['Login', 'DomainConfiguration', 'JsonWebKey']);

/**
 * Medplum's project admin types: who the members are, their emails and the project's settings.
 * Hidden from members who are not project admins, with or without a policy, even one naming them.
 */
const PROJECT_ADMIN_TYPES: ReadonlySet<string> = new Set(['Project', 'ProjectMembership', 'User', 'UserSecurityRequest']);

/** Why the identity may not reach the type at all, whatever its policy says; undefined when it may. */
export function accountTypeRefusal(identity: Identity, resourceType: string): string | undefined {
  if (identity.superAdmin) return undefined;
  if (SUPER_ADMIN_TYPES.has(resourceType)) return `Only super admins can access ${resourceType} resources`;
  if (PROJECT_ADMIN_TYPES.has(resourceType) && !identity.projectAdmin) return `Only project admins can access ${resourceType} resources`;
  return undefined;
}

/**
 * Whether nothing hides any type from the identity: a super admin without SMART scopes. Everyone
 * else has at least the super admins' types hidden.
 */
export function readsEveryType(identity: Identity): boolean {
  return identity.superAdmin && !identity.scopes;
}

/**
 * The types a search of every type (no type list) must leave out: the account types hidden from
 * the identity and the types whose own rule grants no read.
 */
export function typesNotReadEverywhere(identity: Identity): string[] {
  if (identity.superAdmin) return [];
  const named = (identity.accessPolicy?.resources ?? []).map((rule) => rule.resourceType).filter((type) => type !== '*');
  return [...new Set([...SUPER_ADMIN_TYPES, ...PROJECT_ADMIN_TYPES, ...named])].filter((type) => !policyAllowsType(identity, type));
}

/**
 * The policy rule for the type: its own, else `*`; null when neither or when the type is hidden
 * from the identity's kind of account, undefined when no policy applies. A project admin's policy
 * does not apply to the project admin types: as Medplum replaces such rules with its own, admins
 * read their Project and manage its members and users whatever the policy lists (the writes those
 * types allow at all are decided elsewhere: Project by super admins, server-wide Users likewise).
 */
export function ruleFor(identity: Identity, resourceType: string): AccessRule | null | undefined {
  if (identity.superAdmin) return undefined;
  if (accountTypeRefusal(identity, resourceType)) return null;
  if (PROJECT_ADMIN_TYPES.has(resourceType)) return undefined;
  const policy = identity.accessPolicy;
  if (!policy) return undefined;
  const own = policy.resources.find((rule) => rule.resourceType === resourceType);
  if (own) return own;
  return policy.resources.find((rule) => rule.resourceType === '*') ?? null;
}

const READS: readonly PolicyInteraction[] = ['read', 'vread', 'history', 'search'];

/**
 * Whether a rule grants the interaction: as its `interaction` list says when it has one (Medplum
 * reads that list alone then, `readonly` included), else every interaction, or the reads when `readonly`.
 */
export function ruleAllows(rule: AccessRule, interaction: PolicyInteraction): boolean {
  if (rule.interactions) return rule.interactions.includes(interaction);
  return !rule.readonly || READS.includes(interaction);
}

/**
 * False when the caller's policy does not let it read the type (no rule for it nor `*`, or one
 * whose interactions list no read), or its SMART scopes do not grant the permission its searches
 * run under (scopeUse) on the type. Reads that are no interaction of their own (included
 * resources, references, chains) need any read interaction.
 */
export function policyAllowsType(identity: Identity, resourceType: string): boolean {
  const rule = ruleFor(identity, resourceType);
  if (rule === null || (rule && !READS.some((read) => ruleAllows(rule, read)))) return false;
  return !identity.scopes || scopeAllows(identity, resourceType, scopeUseOf(identity));
}

/**
 * The criteria of the type's own policy rule as search parameters. A rule's `compartment` adds
 * `_compartment=<it>`, whether the rule names the type or is `*` (`_compartment` exists on every
 * type; other criteria name one type).
 */
function ruleCriteria(identity: Identity, resourceType: string): [string, string][] | undefined {
  const rule = ruleFor(identity, resourceType);
  if (!rule) return undefined;
  const params: [string, string][] = [];
  if (rule.criteria && rule.resourceType === resourceType) {
    const query = rule.criteria.includes('?') ? rule.criteria.slice(rule.criteria.indexOf('?') + 1) : rule.criteria;
    params.push(...new URLSearchParams(query).entries());
  }
  if (rule.compartment) params.push(['_compartment', rule.compartment]);
  return params.length > 0 ? params : undefined;
}

/**
 * What narrows a search of the type: the policy's criteria (`all` must hold) and the SMART scopes'
 * (`anyOf`: one of the groups must hold; an empty list lets nothing through). Undefined when
 * nothing does.
 */
export interface TypeCriteria {
  readonly all: readonly (readonly [string, string])[];
  readonly anyOf?: readonly CriteriaGroup[];
}

export function typeCriteria(identity: Identity, resourceType: string): TypeCriteria | undefined {
  const all = ruleCriteria(identity, resourceType);
  const anyOf = identity.scopes ? scopeCriteria(identity, resourceType, scopeUseOf(identity)) : undefined;
  if (!all && !anyOf) return undefined;
  return { all: all ?? [], ...(anyOf ? { anyOf } : {}) };
}

/**
 * Every search parameter that narrows the type (policy criteria and scope conditions together),
 * or undefined when unrestricted: for callers that ask whether, and by which parameters, a type is
 * narrowed. The search itself applies typeCriteria.
 */
export function policyCriteria(identity: Identity, resourceType: string): [string, string][] | undefined {
  const criteria = typeCriteria(identity, resourceType);
  if (!criteria) return undefined;
  return [...criteria.all, ...(criteria.anyOf ?? []).flat()].map(([name, value]) => [name, value]);
}

/**
 * Whether the caller's policy narrows some type by criteria or a compartment (a `*` rule's
 * compartment narrows every type). A search of every type cannot apply per-type criteria, whose
 * parameters exist on their own type only.
 */
export function policyNarrowsSomeType(identity: Identity): boolean {
  const policy = identity.accessPolicy;
  if (!policy || identity.superAdmin) return false;
  return policy.resources.some((rule) => rule.criteria !== undefined || rule.compartment !== undefined);
}

/** False when the caller's policy does not list the type, or lists it read-only or without `update`. */
export function policyAllowsWrite(identity: Identity, resourceType: string): boolean {
  const rule = ruleFor(identity, resourceType);
  return rule === undefined || (rule !== null && ruleAllows(rule, 'update'));
}
