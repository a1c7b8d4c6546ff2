/**
 * Minimal structural types for FHIR JSON handled generically by the server core. Full per-type
 * interfaces come from code generation (src/generated); the core treats resources as JSON objects.
 */
export interface Meta {
  versionId?: string;
  lastUpdated?: string;
  source?: string;
  profile?: string[];
  security?: Coding[];
  tag?: Coding[];
  /** Flint extension: the id of the Project that owns the resource. */
  project?: string;
  [key: string]: unknown;
}

export interface Coding {
  system?: string;
  version?: string;
  code?: string;
  display?: string;
}

export interface Resource {
  resourceType: string;
  id?: string;
  meta?: Meta;
  [key: string]: unknown;
}

export interface OperationOutcomeIssue {
  severity: 'fatal' | 'error' | 'warning' | 'information';
  code: string;
  details?: { text: string };
  diagnostics?: string;
  expression?: string[];
}

export interface OperationOutcome extends Resource {
  resourceType: 'OperationOutcome';
  issue: OperationOutcomeIssue[];
}

export interface BundleEntry {
  fullUrl?: string;
  resource?: Resource;
  search?: { mode?: 'match' | 'include' | 'outcome'; score?: number };
  request?: { method: string; url: string };
  response?: { status: string; location?: string; etag?: string; lastModified?: string };
}

export interface BundleLink {
  relation: string;
  url: string;
}

export interface Bundle extends Resource {
  resourceType: 'Bundle';
  type: string;
  total?: number;
  link?: BundleLink[];
  entry?: BundleEntry[];
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
