import type { ResourceType, ResourceTypeMap } from './resources.js';
import type { Resource } from './types.js';

/**
 * True when `resource` is of the given type; narrows it to that type's generated form. Only
 * `resourceType` is checked: for validated or packaged resources, not a client's unchecked JSON.
 */
export function isResourceOf<K extends ResourceType>(resource: Resource | undefined, type: K): resource is Resource & ResourceTypeMap[K] {
  return resource?.resourceType === type;
}

/**
 * A stored resource as its generated type. Stored resources were validated against the same
 * definitions the types come from, so checking `resourceType` is enough; a mismatch is a bug.
 */
export function asResourceOf<K extends ResourceType>(resource: Resource, type: K): ResourceTypeMap[K] {
  if (resource.resourceType !== type) throw new Error(`Expected a ${type}, got ${resource.resourceType}`);
  return resource as ResourceTypeMap[K];
}

/** Reads one resource through a repository (project-scoped, access-checked) as its generated type. */
export async function readTyped<K extends ResourceType>(
  repo: { readResource(resourceType: string, id: string): Promise<Resource> },
  type: K,
  id: string,
): Promise<ResourceTypeMap[K]> {
  return asResourceOf(await repo.readResource(type, id), type);
}
