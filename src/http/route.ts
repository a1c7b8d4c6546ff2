import type { HonoContext } from './fhir-handlers.js';

/** FHIR RESTful interactions (http://hl7.org/fhir/R4/http.html); the CapabilityStatement lists them. */
export type TypeInteraction =
  | 'read'
  | 'vread'
  | 'update'
  | 'patch'
  | 'delete'
  | 'history-instance'
  | 'history-type'
  | 'create'
  | 'search-type';
export type SystemInteraction = 'capabilities' | 'transaction' | 'batch' | 'search-system' | 'history-system';

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  handler: (c: HonoContext) => Promise<Response>;
  /** The FHIR interaction the route implements, at type or system level. */
  interaction?: { type: TypeInteraction } | { system: SystemInteraction };
  /** Served without authentication (metadata, health, well-known documents, token endpoints). */
  public?: boolean;
}
