import type { ResourceType, ResourceTypeMap } from '../generated/fhir-resources.js';
import { isResourceType } from './definitions.js';
import type { Resource } from './types.js';

/**
 * The FHIR JSON types of every resource, data type, backbone element and required-binding value
 * set, generated from the definitions through the GraphQL schema (src/generated/fhir-resources.ts,
 * `npm run generate:schema` then `npm run codegen`). The rest of the code imports them from here,
 * never from src/generated.
 *
 * Generated fields are all optional (GraphQL cannot say `min: 1`), so code that relies on a required
 * element narrows or checks it. Code that handles any resource as JSON keeps using `Resource`
 * (src/fhir/types.ts); `asResourceOf` turns such a value into its generated type.
 */
export type * from '../generated/fhir-resources.js';

/** `T` with the keys `K` required and present (the generated types make every element optional). */
export type WithRequired<T, K extends keyof T> = T & { [P in K]-?: Exclude<T[P], undefined> };

/** A concrete resource type name (R4 or admin): the runtime check behind `ResourceType`. */
export function isResourceTypeName(name: string): name is ResourceType {
  return isResourceType(name);
}

/** True when `resource` is of the given type; narrows it to that type's generated form. */
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
