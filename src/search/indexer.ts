import { isResourceType } from '../fhir/definitions.js';
import type { Resource } from '../fhir/types.js';
import { emptyIndexRows, type IndexRows } from './index-rows.js';
import { collectRows } from './indexing/collect.js';
import { getIndexPlan } from './indexing/plan.js';

/**
 * Search index rows for a resource, from the SearchParameters of its type: each parameter's
 * FHIRPath expression is evaluated (indexing/plan.ts: a fast path for plain paths, fhirpath.js for
 * the rest) and each value turned into rows by its FHIR type (indexing/rows.ts). Runs inside every
 * create and update, so all per-type work (splitting, parsing, type resolution) is done once per
 * type and cached. Duplicate rows are removed; data of an unexpected shape gives no rows, never an
 * error.
 *
 * Not indexed: composite and special parameters, `_id` and `_lastUpdated` (columns of the resource
 * table), References with only an identifier, contained targets (`#id`), Range, Ratio and
 * SampledData values, and resources as values (`Bundle.entry[0].resource`).
 */
export function buildIndexRows(resource: Resource): IndexRows {
  // Unknown types are refused before storage; not building (and caching) plans for them keeps
  // arbitrary client input from growing the plan cache.
  if (typeof resource?.resourceType !== 'string' || !isResourceType(resource.resourceType)) return emptyIndexRows();
  return collectRows(resource, getIndexPlan(resource.resourceType));
}
