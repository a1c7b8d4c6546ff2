import type { SearchCache } from '../cache/search-cache.js';
import type { SqlExecutor } from '../db/database.js';
import { accountsOf } from '../fhir/accounts.js';
import type { Reference } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import { canSee } from '../storage/project-scope.js';

/**
 * The accounts of patients, for the writes that inherit them (write-accounts.ts). Most projects
 * give no Patient an account, so whether one does is kept per project in the search cache: it is
 * dropped, as the counts are, when any Patient of the project is written (on every server), and
 * after a minute. While it says "none", a write reads no Patient at all.
 */

/**
 * Whether a Patient of the project has an account: one probe of the partial index of migration
 * 0026, which holds the `_compartment` rows of Patients other than their own (their accounts).
 * The condition repeats the index's literally, so the plan needs no statistics.
 */
const HAS_PATIENT_ACCOUNTS = `SELECT EXISTS (
     SELECT 1 FROM reference_index
     WHERE "projectId" = $1 AND "resourceType" = 'Patient' AND "code" = '_compartment'
       AND ("targetType" IS DISTINCT FROM 'Patient' OR "targetId" IS DISTINCT FROM "resourceId")
   ) AS found`;

/** Only the accounts of each Patient (by primary key, as SELECT_CURRENT_MANY probes), not its whole content. */
const PATIENT_ACCOUNTS = `SELECT r.id, r."projectId",
       json_build_object('account', r.content->'meta'->'account', 'accounts', r.content->'meta'->'accounts')::text AS meta
     FROM json_array_elements_text($1::json) AS k(id)
     CROSS JOIN LATERAL (
       SELECT x.id, x."projectId", x.content FROM resource x
       WHERE x."resourceType" = 'Patient' AND x.id = k.id AND NOT x.deleted LIMIT 1
     ) r`;

const flagKey = (projectId: string) => `patient-accounts\u0000${projectId}`;

/** Whether the writer's project may hold patients with accounts (true when it cannot tell cheaply). */
async function mayHavePatientAccounts(identity: Identity, db: SqlExecutor, cache: SearchCache | undefined): Promise<boolean> {
  // A super admin's write may name patients of any project; a transaction's own earlier writes are not in the cache yet.
  if (!cache || identity.superAdmin) return true;
  const known = cache.getKept(flagKey(identity.projectId));
  if (known !== undefined) return known === 1;
  const at = cache.now();
  const rows = await db.query<{ found: boolean }>(HAS_PATIENT_ACCOUNTS, [identity.projectId], { planOnce: true });
  const found = rows[0]?.found === true;
  cache.set(flagKey(identity.projectId), { projectIds: [identity.projectId], types: ['Patient'] }, at, found ? 1 : 0);
  return found;
}

/**
 * The accounts of the patients (ids) the caller's project holds, by id: nothing read when the
 * project has no patient with accounts, else one statement. `cache` is left out inside a
 * transaction Bundle, whose earlier entries may have given a Patient accounts.
 */
export async function patientAccounts(
  identity: Identity,
  db: SqlExecutor,
  ids: readonly string[],
  cache: SearchCache | undefined,
): Promise<Map<string, Reference[]>> {
  const byId = new Map<string, Reference[]>();
  if (ids.length === 0 || !(await mayHavePatientAccounts(identity, db, cache))) return byId;
  const rows = await db.query<{ id: string; projectId: string; meta: string }>(PATIENT_ACCOUNTS, [JSON.stringify(ids)], { planOnce: true });
  for (const row of rows) {
    if (!canSee(identity, row.projectId)) continue;
    const meta = JSON.parse(row.meta) as Resource['meta'];
    byId.set(row.id, accountsOf({ resourceType: 'Patient', meta } as Resource));
  }
  return byId;
}
