import { accountsOf, uniqueAccounts, withAccounts } from '../fhir/accounts.js';
import { patientCompartmentParams, patientCompartmentTypes } from '../fhir/compartments.js';
import { getSearchParametersFor } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import type { Reference } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { MAX_COUNT, MAX_OFFSET, search, searchServicesFor } from '../search/service.js';

/**
 * `$set-accounts` (Medplum's operation): sets `meta.accounts` of a resource and, with `propagate`
 * on a Patient, applies the same additions and removals to every resource in that patient's
 * compartment. Synchronous and in one transaction (all or nothing), so it is bounded by
 * SET_ACCOUNTS_MAX_RESOURCES; the `_compartment` search parameter and AccessPolicy criteria
 * then see the accounts (src/indexing/compartment-rows.ts).
 */

interface SetAccountsInput {
  accounts: Reference[];
  propagate?: boolean;
}

interface SetAccountsOutput {
  resourcesUpdated: number;
}

export const setAccountsOperation: Operation<SetAccountsInput, SetAccountsOutput> = {
  definition: ownOperationDefinition('set-accounts.json'),
  rollsBack: true,
  access: 'project-admin',
  async check(input) {
    input.accounts.forEach((account, index) => {
      if (typeof account.reference !== 'string' || account.reference.trim() === '') {
        throw errors.invalid('Each account must be a reference such as Organization/<id>', `Parameters.parameter[${index}].valueReference.reference`);
      }
    });
  },
  async handler(input, { ctx, resourceType, id }) {
    const accounts = uniqueAccounts(input.accounts);
    return ctx.inTransaction(async (tx) => {
      const target = await tx.repo.readResource(resourceType!, id!);
      const before = accountsOf(target);
      const members = input.propagate && target.resourceType === 'Patient' ? await compartmentMembers(tx, target.id!) : [];
      const max = Math.min(ctx.config.setAccountsMaxResources, MAX_OFFSET);
      if (members.length + 1 > max) throw tooMany(max);
      await tx.repo.updateResource(target.resourceType, target.id!, withAccounts(target, accounts));
      const added = accounts.filter((account) => !before.some((old) => old.reference === account.reference));
      const removed = before.filter((old) => !accounts.some((account) => account.reference === old.reference));
      for (const member of members) {
        const kept = accountsOf(member).filter((own) => !removed.some((gone) => gone.reference === own.reference));
        const next = uniqueAccounts([...kept, ...added]);
        await tx.repo.updateResource(member.resourceType, member.id!, withAccounts(member, next));
      }
      return { resourcesUpdated: members.length + 1 };
    });
  },
};

function tooMany(max: number) {
  return errors.tooCostly(
    `$set-accounts updates at most ${max} resources in one call (SET_ACCOUNTS_MAX_RESOURCES), and this patient's compartment holds more: set the accounts of fewer resources at a time`,
  );
}

/**
 * The resources in Patient `patientId`'s compartment, other Patients left out (as Medplum does),
 * found by each type's compartment parameters (`subject=Patient/x`...) rather than by
 * `_compartment`, so resources written before that parameter existed are found without a reindex.
 * Types sharing a parameter code are searched together; a resource found twice counts once.
 */
async function compartmentMembers(ctx: RequestContext, patientId: string): Promise<Resource[]> {
  const found = new Map<string, Resource>();
  const max = Math.min(ctx.config.setAccountsMaxResources, MAX_OFFSET);
  for (const [code, types] of typesByParameter()) {
    for (let offset = 0; ; offset += MAX_COUNT) {
      const count = Math.min(MAX_COUNT, max - found.size + 1);
      const result = await search(searchServicesFor(ctx), types, [
        [code, `Patient/${patientId}`],
        ['_count', String(count)],
        ['_offset', String(offset)],
        ['_sort', '_id'],
      ]);
      for (const row of result.matches) found.set(`${row.resourceType}/${row.id}`, JSON.parse(row.text) as Resource);
      // One more than the limit is enough to refuse the call.
      if (found.size >= max || result.matches.length < count || offset + MAX_COUNT > MAX_OFFSET) break;
    }
    if (found.size >= max) break;
  }
  return [...found.values()];
}

let byParameter: Map<string, string[]> | undefined;

/** Parameter code → the compartment types (Patient aside) that link to a Patient by it. */
function typesByParameter(): Map<string, string[]> {
  if (!byParameter) {
    byParameter = new Map();
    for (const type of patientCompartmentTypes()) {
      if (type === 'Patient') continue;
      const defined = getSearchParametersFor(type);
      for (const code of patientCompartmentParams(type)) {
        if (!defined.some((param) => param.code === code && param.type === 'reference')) continue;
        let types = byParameter.get(code);
        if (!types) byParameter.set(code, (types = []));
        types.push(type);
      }
    }
  }
  return byParameter;
}
