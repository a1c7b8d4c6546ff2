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

/** The criteria of the type's own policy rule as search parameters, or undefined when unrestricted. */
export function policyCriteria(identity: Identity, resourceType: string): [string, string][] | undefined {
  const rule = ruleFor(identity, resourceType);
  if (!rule?.criteria || rule.resourceType !== resourceType) return undefined;
  const query = rule.criteria.includes('?') ? rule.criteria.slice(rule.criteria.indexOf('?') + 1) : rule.criteria;
  const params = [...new URLSearchParams(query).entries()];
  return params.length > 0 ? params : undefined;
}

/** False when the caller's policy does not list the type, or lists it read-only. */
export function policyAllowsWrite(identity: Identity, resourceType: string): boolean {
  const rule = ruleFor(identity, resourceType);
  return rule === undefined || (rule !== null && rule.readonly !== true);
}
