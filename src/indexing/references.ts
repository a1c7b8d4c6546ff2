import { ID_SOURCE } from '../fhir/ids.js';
import { isResourceType } from '../fhir/definitions.js';

/**
 * Reading `Type/id` out of reference strings, for reference rows and for `resolve()`: the indexer
 * never loads other resources, so a reference's target type is whatever its text says.
 */

export interface ReferenceTarget {
  targetType: string | null;
  targetId: string | null;
  url: string | null;
}

const ID = ID_SOURCE;
const LOCAL = new RegExp(`^([A-Z][A-Za-z]*)/(${ID})(?:/_history/${ID})?$`);
const TAIL = new RegExp(`/([A-Z][A-Za-z]*)/(${ID})(?:/_history/${ID})?$`);

function localTarget(text: string, pattern: RegExp): { type: string; id: string } | undefined {
  const match = pattern.exec(text);
  if (!match || !isResourceType(match[1])) return undefined;
  return { type: match[1], id: match[2] };
}

/**
 * A Reference.reference as a row: `Type/id` (version dropped) is local; anything else is kept as a
 * URL, with its `.../Type/id` tail as the target when it has one. `#contained` gives undefined:
 * the target lives inside this resource and is indexed nowhere.
 */
export function parseReference(reference: string): ReferenceTarget | undefined {
  if (reference.startsWith('#')) return undefined;
  const local = localTarget(reference, LOCAL);
  if (local) return { targetType: local.type, targetId: local.id, url: null };
  const tail = localTarget(reference, TAIL);
  return { targetType: tail?.type ?? null, targetId: tail?.id ?? null, url: reference };
}

/** A canonical (or uri) as a row: kept as written, with `.../Type/id` (before `|version`) as target. */
export function parseCanonical(canonical: string): ReferenceTarget {
  const bare = canonical.replace(/[|#].*$/, '');
  const target = localTarget(bare, TAIL) ?? localTarget(bare, LOCAL);
  return { targetType: target?.type ?? null, targetId: target?.id ?? null, url: canonical };
}

/**
 * Type and id for `resolve()`: a stand-in resource that only knows what the reference says. The
 * reference text decides; without a usable one (`urn:uuid:...`, identifier only), Reference.type,
 * the declared type of the target, still answers `resolve() is Patient`.
 */
export function referencedStub(value: unknown): { resourceType: string; id?: string } | undefined {
  const reference = value as { reference?: unknown; type?: unknown } | null;
  const text = typeof value === 'string' ? value : reference?.reference;
  if (typeof text === 'string' && !text.startsWith('#')) {
    const target = localTarget(text, LOCAL) ?? localTarget(text.replace(/[|#].*$/, ''), TAIL);
    if (target) return { resourceType: target.type, id: target.id };
  }
  const hint = typeof value === 'object' ? reference?.type : undefined;
  return typeof hint === 'string' && isResourceType(hint) ? { resourceType: hint } : undefined;
}

/** The resource type a Reference (or reference string) points at, or undefined when unknown. */
export function referencedType(value: unknown): string | undefined {
  return referencedStub(value)?.resourceType;
}
