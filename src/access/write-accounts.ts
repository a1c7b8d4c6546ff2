import type { SqlExecutor } from '../db/database.js';
import { accountsOf, uniqueAccounts, withAccounts } from '../fhir/accounts.js';
import type { Reference } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import { compartmentPatientIds } from '../indexing/compartment-rows.js';
import { selectCurrentMany } from '../storage/current-versions.js';
import { canSee } from '../storage/project-scope.js';

/**
 * Who sets `meta.accounts` on an ordinary write (create, update, patch), as Medplum decides it:
 * - a project admin or super admin whose body has `meta`: the accounts in it, as given (a `meta`
 *   without accounts clears them; `$set-accounts` is the way that touches compartments too);
 * - anyone else, or an admin whose body has no `meta`: accounts in the body are ignored, and the
 *   resource gets the accounts it already had (an update keeps them), on creation the account of
 *   the writer's AccessPolicy `compartment` (Medplum's, deprecated), and the accounts of the
 *   patients whose compartment it is in (an Observation of a patient of clinic A is clinic A's).
 * Medplum recomputes a non-Patient's accounts from its patients alone on every such write; Flint
 * keeps the ones the resource had as well, so a write never drops a resource out of an account.
 */
export function maySetAccounts(identity: Identity): boolean {
  return identity.superAdmin || identity.projectAdmin === true;
}

/** The content a write stores, with its `meta.accounts` decided as above; `db` is where the write's statements go. */
export async function decideAccounts(identity: Identity, db: SqlExecutor, input: Resource, existing: Resource | undefined): Promise<Resource> {
  if (maySetAccounts(identity) && input.meta !== undefined) return input;
  const accounts: Reference[] = [...accountsOf(existing)];
  const policyAccount = identity.accessPolicy?.compartment;
  if (!existing && policyAccount) accounts.push({ reference: policyAccount });
  accounts.push(...(await patientAccounts(identity, db, compartmentPatientIds(input))));
  return withAccounts(input, uniqueAccounts(accounts));
}

/** The accounts of the patients (ids) the caller's project holds, in one read. */
async function patientAccounts(identity: Identity, db: SqlExecutor, ids: readonly string[]): Promise<Reference[]> {
  if (ids.length === 0) return [];
  const versions = await selectCurrentMany(db, ids.map((id) => ({ resourceType: 'Patient', id })));
  return versions.flatMap((version) =>
    version.deleted || version.text === null || !canSee(identity, version.projectId) ? [] : accountsOf(JSON.parse(version.text) as Resource),
  );
}
