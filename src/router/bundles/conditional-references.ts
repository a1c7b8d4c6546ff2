import type { RequestContext } from '../../operations/context.js';
import { errors } from '../../fhir/outcome.js';
import { conditionalCriteria, findMatches } from '../conditional.js';
import { type BundleEntryRequest, failedEntry } from './entries.js';
import { mapReferences } from './references.js';

const CONDITIONAL_REFERENCE = /^([A-Z][A-Za-z]+)\?(.*)$/;

/**
 * Conditional references (`"reference": "Patient?identifier=http://mrn|M1"`) of a transaction's
 * resources, each resolved to its one match in the caller's project. They are searched before any
 * entry is written, so they see the data as it was before the transaction. None or several
 * matches fail the transaction (412) naming the search.
 */
export async function resolveConditionalReferences(tx: RequestContext, wanted: ReadonlyMap<string, number>): Promise<Map<string, string>> {
  const resolved = new Map<string, string>();
  for (const [reference, index] of wanted) {
    const [, type, query] = CONDITIONAL_REFERENCE.exec(reference)!;
    try {
      const matches = await findMatches(tx, type, conditionalCriteria(new URLSearchParams(query), `The conditional reference ${reference}`));
      if (matches.length !== 1) {
        throw errors.preconditionFailed(`The conditional reference ${reference} matches ${matches.length === 0 ? 'no' : 'more than one'} ${type}: it must match exactly one`);
      }
      resolved.set(reference, `${type}/${matches[0].id}`);
    } catch (error) {
      throw failedEntry(index, error);
    }
  }
  return resolved;
}

/** Each conditional reference of the entries' resources, with the index of the first entry that has it. */
export function conditionalReferencesOf(entries: readonly BundleEntryRequest[]): Map<string, number> {
  const wanted = new Map<string, number>();
  for (const entry of entries) {
    if (!entry.resource) continue;
    mapReferences(entry.resource, (value, isReference) => {
      if (isReference && CONDITIONAL_REFERENCE.test(value) && !wanted.has(value)) wanted.set(value, entry.index);
      return value;
    });
  }
  return wanted;
}
