import { isRecord } from '../../fhir/types.js';

/**
 * `resolve()` for invariants, without fetching anything (fhirpath.js's own is asynchronous and
 * fetches over HTTP): `#id` gives the contained resource of `%rootResource`, `Type/id` (relative,
 * absolute or versioned) a stand-in `{resourceType, id}`, which is all that `is Practitioner` or
 * `ofType(Practitioner)` need; anything else (urn:uuid:, logical references) resolves to nothing.
 */

interface NodeLike {
  data: unknown;
  constructor: { makeResNode?: (ctx: unknown, data: unknown, ...rest: null[]) => unknown };
}

interface EngineContext {
  vars?: { rootResource?: unknown };
}

const TYPED_TAIL = /(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

function isNode(value: unknown): value is NodeLike {
  return typeof value === 'object' && value !== null && 'data' in value && 'getTypeInfo' in value;
}

function referenceText(data: unknown): string | undefined {
  if (typeof data === 'string') return data;
  return isRecord(data) && typeof data.reference === 'string' ? data.reference : undefined;
}

function target(reference: string, rootResource: unknown): unknown {
  if (reference.startsWith('#')) {
    const contained = isRecord(rootResource) && Array.isArray(rootResource.contained) ? rootResource.contained : [];
    return contained.find((resource) => isRecord(resource) && resource.id === reference.slice(1));
  }
  const match = TYPED_TAIL.exec(reference);
  return match ? { resourceType: match[1], id: match[2] } : undefined;
}

export const contextResolve = {
  fn: function (this: EngineContext, collection: unknown[]): unknown[] {
    const out: unknown[] = [];
    for (const item of collection) {
      if (!isNode(item) || !item.constructor.makeResNode) continue;
      const text = referenceText(item.data);
      const found = text === undefined ? undefined : target(text, this.vars?.rootResource);
      if (found !== undefined) out.push(item.constructor.makeResNode(this, found, null, null, null, null));
    }
    return out;
  },
  arity: { 0: [] },
  internalStructures: true,
};
