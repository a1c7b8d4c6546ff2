import { getResourceTypes } from '../fhir/definitions.js';
import type { Identity } from '../identity/identity.js';
import { policyAllowsType, policyCriteria, readsEveryType } from '../identity/policy.js';
import type { HistoryOptions } from '../storage/types.js';

/**
 * A system history leaves out the account types hidden from the caller (policy.ts), and under an
 * AccessPolicy the types the policy does not allow and those it narrows by criteria: a history page cannot tell which past versions met them. Left out rather
 * than refused, so that a policy does not make the system history unusable (a type's own history
 * refuses a criteria-narrowed type, naming it). SMART scopes hide the same way the types they do
 * not grant `r` on and those they narrow. Given as the types left out, even for a policy that
 * lists the few it allows: the store keeps such a condition out of its index choice
 * (storage/history.ts, pageConditions).
 */
export function systemHistoryOptions(who: Identity, options: HistoryOptions): HistoryOptions {
  if (readsEveryType(who)) return options;
  const hidden = getResourceTypes().filter((type) => !policyAllowsType(who, type) || policyCriteria(who, type) !== undefined);
  if (hidden.length === 0) return options;
  return { ...options, excludeTypes: [...(options.excludeTypes ?? []), ...hidden] };
}
