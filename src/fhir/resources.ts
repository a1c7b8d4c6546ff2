import type { ResourceType, ResourceTypeMap } from '../generated/fhir-resources.js';
import type { Resource } from './types.js';

/**
 * The FHIR JSON types of every resource, data type, backbone element and required-binding value
 * set, generated from the definitions through the GraphQL schema (src/generated/fhir-resources.ts,
 * `npm run generate:schema` then `npm run codegen`). The rest of the code imports them from here,
 * never from src/generated.
 *
 * `ResourceTypeMap` maps every concrete resource type to its type, `ResourceType` names them (the
 * runtime check is `isResourceType` in definitions.ts) and `AnyResource` is their union,
 * discriminated by `resourceType`. Generated elements are all optional (GraphQL cannot say
 * `min: 1`): code that relies on a required element checks it, or derives a stricter type with
 * `WithRequired` / `Override` (as operations/definition.ts and fhir/types.ts do). Code that
 * handles any resource as JSON keeps using `Resource` (src/fhir/types.ts); `asResourceOf` turns a
 * stored one into its generated type.
 */
export type * from '../generated/fhir-resources.js';

/** `T` with the keys `K` required and present (the generated types make every element optional). */
export type WithRequired<T, K extends keyof T> = T & { [P in K]-?: Exclude<T[P], undefined> };

/** `T` with the elements of `U` replaced, e.g. a list of generated items by a stricter item type. */
export type Override<T, U> = Omit<T, keyof U> & U;

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
