import type { SqlExecutor } from '../db/database.js';
import type { Resource } from '../fhir/types.js';

/**
 * Completion of a resource before it is stored, for a type whose stored form carries what the
 * server derives from it: a StructureDefinition written with a differential only gets its
 * snapshot. The layer that knows how sits above storage, so the composition root registers it;
 * one preparer per type, run on every write of that type (create, update, patch, Bundle entries)
 * after the resource's shape was checked and before the checks of resource-checks.ts. A preparer
 * throws an OperationOutcomeError (400) when the resource cannot be completed.
 */
export interface PrepareContext {
  /** The project whose definitions apply. */
  readonly projectId: string;
  /** Where the preparer's reads go: the write's transaction when there is one. */
  readonly db: SqlExecutor;
}

export type ResourcePreparer = (resource: Resource, context: PrepareContext) => Promise<Resource>;

const preparers = new Map<string, ResourcePreparer>();

export function registerResourcePreparer(resourceType: string, preparer: ResourcePreparer): void {
  preparers.set(resourceType, preparer);
}

/** The resource as it will be stored: completed by its type's preparer, or unchanged (one Map lookup). */
export function prepareResource(resource: Resource, context: PrepareContext): Promise<Resource> | Resource {
  const preparer = preparers.get(resource.resourceType);
  return preparer ? preparer(resource, context) : resource;
}
