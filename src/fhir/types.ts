import type {
  Bundle as FhirBundle,
  BundleEntry as FhirBundleEntry,
  BundleEntryRequest,
  BundleEntryResponse,
  BundleLink as FhirBundleLink,
  BundleType,
  Meta,
  OperationOutcome as FhirOperationOutcome,
  OperationOutcomeIssue as FhirOperationOutcomeIssue,
  Override,
  WithRequired,
} from './resources.js';

/**
 * Types for FHIR JSON the server core handles generically. `Resource` is any resource as a JSON
 * object; the per-type interfaces are generated (src/fhir/resources.ts). The types below are the
 * generated ones with the elements FHIR requires (1..1) required, as the server builds and reads
 * them, and Bundle entries holding any resource as `Resource`.
 */
export type { Coding, Meta } from './resources.js';

export interface Resource {
  resourceType: string;
  id?: string;
  meta?: Meta;
  [key: string]: unknown;
}

export type OperationOutcomeIssue = WithRequired<FhirOperationOutcomeIssue, 'severity' | 'code'>;

export type OperationOutcome = Override<FhirOperationOutcome, { issue: OperationOutcomeIssue[] }>;

export type BundleLink = WithRequired<FhirBundleLink, 'relation' | 'url'>;

export type BundleEntry = Override<
  FhirBundleEntry,
  {
    resource?: Resource;
    request?: WithRequired<BundleEntryRequest, 'method' | 'url'>;
    response?: WithRequired<BundleEntryResponse, 'status'>;
  }
>;

export type Bundle = Override<FhirBundle, { type: BundleType; link?: BundleLink[]; entry?: BundleEntry[] }>;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Removes keys whose value is undefined (the validator rejects them; JSON would drop them). */
export function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
