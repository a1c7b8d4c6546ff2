import type { SqlExecutor } from '../db/database.js';
import { accountsOf, uniqueAccounts, withAccounts } from '../fhir/accounts.js';
import type { Reference } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import { compartmentPatientIds } from '../indexing/compartment-rows.js';
import { selectCurrentMany } from '../storage/current-versions.js';
import { canSee } from '../storage/project-scope.js';
import type { PreparedWrite } from '../storage/types.js';

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

/** The content writes store, with their `meta.accounts` decided as above; `db` is where the writes' statements go. */
export async function decideAccounts(identity: Identity, db: SqlExecutor, writes: readonly PreparedWrite[]): Promise<Resource[]> {
  const inherits = writes.map(({ input }) => !(maySetAccounts(identity) && input.meta !== undefined));
  const patients = writes.map(({ input }, index) => (inherits[index] ? compartmentPatientIds(input) : []));
  const byPatient = await patientAccounts(identity, db, [...new Set(patients.flat())]);
  return writes.map(({ input, existing }, index) => {
    if (!inherits[index]) return input;
    const accounts: Reference[] = [...accountsOf(existing)];
    const policyAccount = identity.accessPolicy?.compartment;
    if (!existing && policyAccount) accounts.push({ reference: policyAccount });
    for (const id of patients[index]) accounts.push(...(byPatient.get(id) ?? []));
    return withAccounts(input, uniqueAccounts(accounts));
  });
}

/** The accounts of the patients (ids) the caller's project holds, by id, in one read. */
async function patientAccounts(identity: Identity, db: SqlExecutor, ids: readonly string[]): Promise<Map<string, Reference[]>> {
  const byId = new Map<string, Reference[]>();
  if (ids.length === 0) return byId;
  for (const version of await selectCurrentMany(db, ids.map((id) => ({ resourceType: 'Patient', id })))) {
    if (version.deleted || version.text === null || !canSee(identity, version.projectId)) continue;
    byId.set(version.id, accountsOf(JSON.parse(version.text) as Resource));
  }
  return byId;
}
