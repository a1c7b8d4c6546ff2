import { isResourceType } from '../fhir/definitions.js';
import type { Resource } from '../fhir/types.js';
import { emptyIndexRows, type IndexRows } from './row-types.js';
import { collectRows } from './collect.js';
import { collectComposites, getCompositePlans } from './composite.js';
import { addCompartmentRows } from './compartment-rows.js';
import { getIndexPlan } from './plan.js';
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
  rows.composite = collectComposites(resource, getCompositePlans(resource.resourceType));
  return rows;
}
