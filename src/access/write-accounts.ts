import type { SearchCache } from '../cache/search-cache.js';
import type { SqlExecutor } from '../db/database.js';
import { accountsOf, uniqueAccounts, withAccounts } from '../fhir/accounts.js';
import type { Reference } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import { compartmentPatientIds } from '../indexing/compartment-rows.js';
import { patientAccounts } from './patient-accounts.js';
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
 * keeps the ones the resource had as well (an admin's, the policy's), dropping only those of the
 * patients it no longer belongs to.
 */
export function maySetAccounts(identity: Identity): boolean {
  return identity.superAdmin || identity.projectAdmin === true;
}

/** The patients whose compartment a written resource is in now, and those it was in before and is no longer. */
interface PatientMove {
  readonly now: readonly string[];
  readonly left: readonly string[];
}

function patientMoveOf({ input, existing }: PreparedWrite): PatientMove {
  const now = compartmentPatientIds(input);
  const before = existing ? compartmentPatientIds(existing) : [];
  return { now, left: before.filter((id) => !now.includes(id)) };
}

/**
 * The content writes store, with their `meta.accounts` decided as above; `db` is where the writes'
 * statements go, `cache` keeps whether the project has patients with accounts (none inside a
 * transaction Bundle). A resource moved to another patient drops the accounts of the patients it
 * left (inherited from them) and takes the new ones'; accounts none of them had stay.
 */
export async function decideAccounts(
  identity: Identity,
  db: SqlExecutor,
  writes: readonly PreparedWrite[],
  cache: SearchCache | undefined,
): Promise<Resource[]> {
  const inherits = writes.map(({ input }) => !(maySetAccounts(identity) && input.meta !== undefined));
  const moves = writes.map((write, index) => (inherits[index] ? patientMoveOf(write) : { now: [], left: [] }));
  const byPatient = await patientAccounts(identity, db, [...new Set(moves.flatMap((move) => [...move.now, ...move.left]))], cache);
  return writes.map(({ input, existing }, index) => {
    if (!inherits[index]) return input;
    const leaving = new Set(moves[index].left.flatMap((id) => byPatient.get(id) ?? []).map((account) => account.reference));
    const accounts: Reference[] = accountsOf(existing).filter((account) => !leaving.has(account.reference));
    const policyAccount = identity.accessPolicy?.compartment;
    if (!existing && policyAccount) accounts.push({ reference: policyAccount });
    for (const id of moves[index].now) accounts.push(...(byPatient.get(id) ?? []));
    return withAccounts(input, uniqueAccounts(accounts));
  });
}
