import type { Identity } from './identity.js';

/**
 * The caller's AccessPolicy, read the way search applies it: which types it allows, and the
 * search criteria (`Patient?organization=Organization/123`) that narrow a type.
 */
function ruleFor(identity: Identity, resourceType: string) {
  const policy = identity.accessPolicy;
  if (!policy || identity.superAdmin) return undefined;
  return (
    policy.resources.find((rule) => rule.resourceType === resourceType) ??
    policy.resources.find((rule) => rule.resourceType === '*') ??
    null
  );
}

/** False when the caller's policy does not list the type (nor `*`). */
export function policyAllowsType(identity: Identity, resourceType: string): boolean {
  return ruleFor(identity, resourceType) !== null;
}

/**
 * The criteria of the type's own policy rule as search parameters, or undefined when unrestricted.
 * A rule's `compartment` adds `_compartment=<it>`, whether the rule names the type or is `*`
 * (`_compartment` exists on every type; other criteria name one type).
 */
export function policyCriteria(identity: Identity, resourceType: string): [string, string][] | undefined {
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
