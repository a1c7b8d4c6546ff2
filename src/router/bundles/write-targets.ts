import { errors } from '../../fhir/outcome.js';
import type { FhirRequest } from '../types.js';
import { entryPath, type BundleEntryRequest } from './entries.js';
import { conditionalCreateTarget } from './same-creates.js';

/**
 * Two entries that write the same resource make the outcome depend on their order: refused, but
 * for conditional creates of the same criteria, which are one resource whatever their order
 * (same-creates.ts). A conditional update of those criteria beside them is still refused: it
 * would replace the created body or not depending on the order.
 */
export function assertOneWritePerResource(entries: readonly BundleEntryRequest[]): void {
  const writers = new Map<string, number>();
  const creators = new Set<string>();
  for (const { index, request, fullUrl } of entries) {
    if (request.method === 'GET' || request.method === 'HEAD') continue;
    const created = conditionalCreateTarget(request);
    const again = created !== undefined && creators.has(created);
    if (created !== undefined) creators.add(created);
    const targets = [again ? undefined : writeTarget(request), fullUrl];
    for (const target of targets) {
      if (target === undefined) continue;
      const earlier = writers.get(target);
      if (earlier !== undefined) {
        throw errors.invalid(`Bundle.entry[${earlier}] and Bundle.entry[${index}] both write ${target}`, entryPath(index));
      }
      writers.set(target, index);
    }
  }
}

/**
 * What a write entry names by its URL: `Patient/1`, or `Patient?identifier=x` for a conditional
 * update and for a conditional create (its ifNoneExist), which both write the one match or a new
 * resource. A plain create names a resource of its own: none.
 */
function writeTarget(request: FhirRequest): string | undefined {
  if (request.method !== 'POST') return request.path + (request.query.size > 0 ? `?${request.query}` : '');
  return conditionalCreateTarget(request);
}
