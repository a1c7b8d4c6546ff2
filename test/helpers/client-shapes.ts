/**
 * The resource shapes the client-library tests read: @medplum/fhirtypes, which @medplum/core's
 * types name, is not installed, so its methods return untyped values.
 */
export interface Resource {
  resourceType: string;
  id?: string;
  meta?: { versionId?: string; lastUpdated?: string };
  [key: string]: any;
}

export interface BundleEntry {
  fullUrl?: string;
  resource?: Resource;
  request?: { method: string; url: string; ifNoneExist?: string };
  response?: { status?: string; location?: string; outcome?: Resource };
}

export interface Bundle extends Resource {
  type?: string;
  total?: number;
  entry?: BundleEntry[];
}
