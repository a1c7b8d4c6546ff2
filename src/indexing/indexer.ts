import { isResourceType } from '../fhir/definitions.js';
import type { Resource } from '../fhir/types.js';
import { emptyIndexRows, type IndexRows } from './row-types.js';
import { collectRows } from './collect.js';
import { collectComposites, storedCompositePlans } from './composite.js';
import { addCompartmentRows } from './compartment-rows.js';
import { getIndexPlan, storedCodes, type ParamPlan } from './plan.js';
import { COMPARTMENT_PARAMETER_CODE, patientCompartmentParams } from '../fhir/compartments.js';
import type { ProjectParameters } from './parameters.js';

/**
 * Search index rows for a resource, from the SearchParameters of its type: each parameter's
 * FHIRPath expression is evaluated (indexing/plan.ts: a fast path for plain paths, fhirpath.js for
 * the rest) and each value turned into rows by its FHIR type (indexing/add-rows.ts). Runs inside every
 * create and update, so all per-type work (splitting, parsing, type resolution) is done once per
 * type and cached. Duplicate rows are removed; data of an unexpected shape gives no rows, never an
 * error.
 *
 * Composite parameters get rows of their own, one per element and combination of component
 * values (indexing/composite.ts). A Reference's `identifier` is stored as a token row under the
 * code `<param>:identifier`, for the `:identifier` modifier. A Range value of a quantity parameter
 * (`onset-age`, `context-quantity`) is one quantity row holding its low and high, and one of a
 * number parameter (RiskAssessment `probability`) one number row likewise (indexing/add-rows.ts).
 *
 * `parameters`: the SearchParameters of the resource's project (src/indexing/parameters.ts), indexed
 * after the built-in ones with the same row builders.
 *
 * `_compartment` rows (the patients whose compartment the resource is in, and its `meta.accounts`)
 * are derived in code from the rows collected (indexing/compartment-rows.ts).
 *
 * Not indexed: special parameters, `_id` and `_lastUpdated` (columns of the resource table),
 * contained targets (`#id`), Ratio and SampledData values, and resources as values
 * (`Bundle.entry[0].resource`).
 */
export function buildIndexRows(resource: Resource, parameters?: ProjectParameters): IndexRows {
  // Unknown types are refused before storage; not building (and caching) plans for them keeps
  // arbitrary client input from growing the plan cache.
  if (typeof resource?.resourceType !== 'string' || !isResourceType(resource.resourceType)) return emptyIndexRows();
  const plan = parameters ? parameters.indexPlan(resource.resourceType) : getIndexPlan(resource.resourceType);
  const rows = collectRows(resource, plan);
  addCompartmentRows(resource, rows);
  rows.composite = collectComposites(resource, storedCompositePlans(resource.resourceType));
  return rows;
}

/** Plans narrowed to some codes, by the full plan they come from (stable per type and project parameters) and the codes. */
const narrowedPlans = new WeakMap<readonly ParamPlan[], Map<ReadonlySet<string>, readonly ParamPlan[]>>();

/**
 * Index rows for the parameters in `codes` (and `_compartment` when it is one of them), without
 * evaluating the others: for resources the server builds and indexes in part (delivery
 * AuditEvents). Rows of the Patient-compartment parameters come along (the caller keeps the rows
 * of `codes`); composite parameters are not evaluated. `codes` should be a set kept for the
 * process: narrowed plans are cached by it.
 */
export function buildIndexRowsOf(resource: Resource, parameters: ProjectParameters | undefined, codes: ReadonlySet<string>): IndexRows {
  if (typeof resource?.resourceType !== 'string' || !isResourceType(resource.resourceType)) return emptyIndexRows();
  const full = parameters ? parameters.indexPlan(resource.resourceType) : getIndexPlan(resource.resourceType);
  const compartment = codes.has(COMPARTMENT_PARAMETER_CODE);
  let byCodes = narrowedPlans.get(full);
  if (!byCodes) narrowedPlans.set(full, (byCodes = new Map()));
  let plan = byCodes.get(codes);
  if (!plan) {
    // The compartment rows are read from the rows of the Patient-compartment parameters.
    // A union parameter's other values are the rows of the parameters it reads (union-rows.ts).
    const wanted = new Set([...codes, ...(compartment ? patientCompartmentParams(resource.resourceType) : [])].flatMap((code) => storedCodes(resource.resourceType, code)));
    plan = full.filter((param) => wanted.has(param.code));
    byCodes.set(codes, plan);
  }
  const rows = collectRows(resource, plan);
  if (compartment) addCompartmentRows(resource, rows);
  return rows;
}
