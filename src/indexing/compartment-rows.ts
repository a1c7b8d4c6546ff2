import { accountsOf } from '../fhir/accounts.js';
import { COMPARTMENT_PARAMETER_CODE, patientCompartmentParams } from '../fhir/compartments.js';
import type { Resource } from '../fhir/types.js';
import { addRows } from './add-rows.js';
import { emptyIndexRows, type IndexRows, type ReferenceRow } from './row-types.js';
import { collectRows } from './collect.js';
import { getIndexPlan, type ParamPlan } from './plan.js';

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
  const guardingPatient = securityContextPatient(resource);
  if (guardingPatient) values.push({ code: COMPARTMENT_PARAMETER_CODE, targetType: 'Patient', targetId: guardingPatient, url: null });
  const accounts = accountsOf(resource);
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

/**
 * The patient a Binary's `securityContext` names: the Binary is in that patient's compartment, as
 * Medplum guards a Binary by its securityContext (a Binary has no compartment of its own, so a
 * patient narrowed to their compartment could otherwise never read back a file they uploaded).
 */
function securityContextPatient(resource: Resource): string | undefined {
  if (resource.resourceType !== 'Binary') return undefined;
  const reference = (resource.securityContext as { reference?: unknown } | undefined)?.reference;
  const match = typeof reference === 'string' ? /^Patient\/([A-Za-z0-9\-.]{1,64})$/.exec(reference) : null;
  return match?.[1];
}

const compartmentPlans = new Map<string, readonly ParamPlan[]>();

/**
 * The ids of the patients whose compartment a resource (not a Patient) is in, from its type's
 * Patient-compartment parameters only: what the write of a resource inherits accounts from.
 */
export function compartmentPatientIds(resource: Resource): string[] {
  if (resource.resourceType === 'Patient') return [];
  let plan = compartmentPlans.get(resource.resourceType);
  if (!plan) {
    const params = new Set(patientCompartmentParams(resource.resourceType));
    plan = params.size === 0 ? [] : getIndexPlan(resource.resourceType).filter((param) => params.has(param.code));
    compartmentPlans.set(resource.resourceType, plan);
  }
  if (plan.length === 0) return [];
  const ids = new Set<string>();
  for (const row of collectRows(resource, plan).reference) {
    if (row.targetType === 'Patient' && row.targetId !== null && row.url === null) ids.add(row.targetId);
  }
  return [...ids];
}
