
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
 * handles any resource as JSON keeps using `Resource` (src/fhir/types.ts); `asResourceOf`
 * (typed-resources.ts) turns a stored one into its generated type.
 */
export type * from '../generated/fhir-resources.js';

/** `T` with the keys `K` required and present (the generated types make every element optional). */
export type WithRequired<T, K extends keyof T> = T & { [P in K]-?: Exclude<T[P], undefined> };

/** `T` with the elements of `U` replaced, e.g. a list of generated items by a stricter item type. */
export type Override<T, U> = Omit<T, keyof U> & U;
