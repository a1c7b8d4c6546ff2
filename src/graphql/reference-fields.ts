import { ID_SOURCE } from '../fhir/ids.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { type Resource, isRecord } from '../fhir/types.js';
import type { GraphQLContext } from './context.js';

/** `Reference.resource`: what a reference points at on this server, loaded through the request's batching loader. */

interface ReferenceValue {
  reference?: unknown;
}

/** `Type/id`, optionally `/_history/<vid>` (the current version is returned, as for any reference). */
const RELATIVE_REFERENCE = new RegExp(`^([A-Z][A-Za-z]+)/(${ID_SOURCE})(?:/_history/${ID_SOURCE})?$`);

type Target = { resourceType: string; id: string; key: string } | { contained: string };

/**
 * Targets by reference text (for one FHIR base): the references of a page come from parsed
 * resources the server keeps (parsed-cache.ts), so the same strings come back request after
 * request, and a map lookup replaces the pattern match and the key's concatenation. Cleared when full.
 */
class TargetCache {
  private readonly targets = new Map<string, Target | null>();

  constructor(readonly fhirBase: string) {}

  get(reference: string): Target | undefined {
    let target = this.targets.get(reference);
    if (target === undefined) {
      target = referenceTarget(reference, this.fhirBase) ?? null;
      if (this.targets.size >= MAX_CACHED_TARGETS) this.targets.clear();
      this.targets.set(reference, target);
    }
    return target ?? undefined;
  }
}

const MAX_CACHED_TARGETS = 10_000;
let targetCache: TargetCache | undefined;

function targetOf(reference: unknown, fhirBase: string): Target | undefined {
  if (typeof reference !== 'string') return undefined;
  if (targetCache?.fhirBase !== fhirBase) targetCache = new TargetCache(fhirBase);
  return targetCache.get(reference);
}

/**
 * What a reference points at on this server: relative (`Patient/1`), absolute under our FHIR base,
 * or `#id` (a resource contained in the same resource). Anything else (another server, `urn:uuid:`,
 * a logical reference by identifier only) is not resolvable here.
 */
export function referenceTarget(reference: unknown, fhirBase: string): Target | undefined {
  if (typeof reference !== 'string') return undefined;
  if (reference.startsWith('#')) return { contained: reference.slice(1) };
  const relative = reference.startsWith(`${fhirBase}/`) ? reference.slice(fhirBase.length + 1) : reference;
  const match = RELATIVE_REFERENCE.exec(relative);
  if (!match || !isResourceType(match[1])) return undefined;
  return { resourceType: match[1], id: match[2], key: `${match[1]}/${match[2]}` };
}

/**
 * `Reference.resource(type, optional)`: the target through the request's batching loader. A
 * reference the server cannot resolve (missing, deleted, in another project, hidden by the caller's
 * AccessPolicy, external, or not a literal reference) is an error on this field only (FHIR GraphQL),
 * the same error whatever the cause so it does not tell "absent" from "not yours"; with
 * `optional: true` it is null. `type` restricts the result to that type (null otherwise).
 */
export async function referenceResolver(
  parent: ReferenceValue,
  args: { type?: string | null; optional?: boolean | null },
  context: GraphQLContext,
): Promise<Resource | null> {
  const wanted = args.type ?? undefined;
  const resource = await resolveReference(parent, wanted, context);
  if (resource === 'other-type') return null;
  if (resource) return resource;
  if (args.optional || parent.reference === undefined) return null;
  throw errors.notFound(`Reference "${parent.reference}" could not be resolved: it is not a resource this server holds that you may read`);
}

async function resolveReference(parent: ReferenceValue, wanted: string | undefined, context: GraphQLContext): Promise<Resource | 'other-type' | null> {
  const target = targetOf(parent.reference, context.requestContext.config.fhirBaseUrl);
  if (!target) return null;
  // A reference that names another type is not loaded at all.
  if ('resourceType' in target && wanted && target.resourceType !== wanted) return 'other-type';
  const resource =
    'contained' in target ? containedTarget(parent, target.contained, context) : await context.loaders.reference(target.key);
  if (resource && wanted && resource.resourceType !== wanted) return 'other-type';
  return resource;
}

/** `#id` from the resource the reference sits in (known for resources this request read or searched). */
function containedTarget(reference: object, id: string, context: GraphQLContext): Resource | null {
  const container = context.loaders.containerOf(reference);
  if (!container) return null;
  if (id === '') return container;
  const contained = Array.isArray(container.contained) ? (container.contained as unknown[]) : [];
  return (contained.find((item) => isRecord(item) && item.id === id) as Resource | undefined) ?? null;
}
