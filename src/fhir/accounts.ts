import type { Reference } from './resources.js';
import type { Resource } from './types.js';

/**
 * `meta.accounts` (Medplum's accounts, tenants): reading and replacing them. `meta.account` is
 * Medplum's older single form; Medplum keeps it equal to the first account, and so does Flint.
 */

/** The accounts of a resource as stored, `meta.account` in front when it is not among `meta.accounts`. */
export function accountsOf(resource: Resource | undefined): Reference[] {
  const meta = resource?.meta as { account?: Reference; accounts?: Reference[] } | undefined;
  const accounts = Array.isArray(meta?.accounts) ? meta.accounts : [];
  if (meta?.account && !accounts.some((account) => account.reference === meta.account?.reference)) return [meta.account, ...accounts];
  return accounts;
}

/** The references once each, in their first order (by `reference` text). */
export function uniqueAccounts(accounts: readonly Reference[]): Reference[] {
  const seen = new Set<string>();
  return accounts.filter((account) => {
    const key = account.reference ?? '';
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The resource with `meta.accounts` replaced, and `meta.account` the first of them; none: both removed. */
export function withAccounts<T extends Resource>(resource: T, accounts: readonly Reference[]): T {
  const { account, accounts: before, ...meta } = (resource.meta ?? {}) as Record<string, unknown>;
  if (accounts.length === 0) return account === undefined && before === undefined ? resource : { ...resource, meta };
  return { ...resource, meta: { ...meta, account: accounts[0], accounts: [...accounts] } };
}
