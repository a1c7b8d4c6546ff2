import { COMPARTMENT_PARAMETER_CODE, patientCompartmentParams } from '../fhir/compartments.js';
import type { Resource } from '../fhir/types.js';
import { addRows } from './add-rows.js';
import { emptyIndexRows, type IndexRows, type ReferenceRow } from './row-types.js';

/**
 * The `_compartment` rows of a resource (src/fhir/compartments.ts): no FHIRPath can say "the
 * patients whose compartment this is in", so they are read from the reference rows the type's
 * Patient-compartment parameters (`subject`, `patient`, `performer`...) already produced, which
 * costs no second evaluation. A Patient is in its own compartment. Every reference of
 * `meta.accounts` (and of the older single `meta.account`) is a value too.
 */
export function addCompartmentRows(resource: Resource, rows: IndexRows): void {
  const values: ReferenceRow[] = [];
  const params = new Set(patientCompartmentParams(resource.resourceType));
  for (const row of rows.reference) {
    if (params.has(row.code) && row.targetType === 'Patient' && row.targetId !== null && row.url === null) {
      values.push({ code: COMPARTMENT_PARAMETER_CODE, targetType: 'Patient', targetId: row.targetId, url: null });
    }
  }
  if (resource.resourceType === 'Patient' && typeof resource.id === 'string') {
    values.push({ code: COMPARTMENT_PARAMETER_CODE, targetType: 'Patient', targetId: resource.id, url: null });
  }
  const accounts = metaAccounts(resource);
  if (accounts.length > 0) {
    // Only the reference rows: an account named by identifier alone names no resource to match.
    const own = emptyIndexRows();
    for (const account of accounts) addRows(own, COMPARTMENT_PARAMETER_CODE, 'reference', { value: account, type: 'Reference' });
    values.push(...own.reference);
  }
  const seen = new Set<string>();
  for (const row of values) {
    const key = `${row.targetType ?? ''}/${row.targetId ?? ''}|${row.url ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.reference.push(row);
  }
}

/** `meta.accounts` with `meta.account` (Medplum's deprecated single form), as written. */
export function metaAccounts(resource: Resource): unknown[] {
  const meta = resource.meta as { account?: unknown; accounts?: unknown } | undefined;
  const accounts = Array.isArray(meta?.accounts) ? [...(meta.accounts as unknown[])] : [];
  if (meta?.account !== undefined) accounts.push(meta.account);
  return accounts;
}
