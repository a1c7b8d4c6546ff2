import { TYPE_AND_ID } from '../fhir/ids.js';
import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { policyAllowsType } from '../identity/policy.js';
import { compartmentPatientIds } from '../indexing/compartment-rows.js';
import type { RequestContext } from '../operations/context.js';
import { keyOf, type ReadKey } from '../storage/types.js';
import { MAX_COUNT, search, searchServicesFor } from '../search/service.js';
import { SUMMARY_TYPES } from './sections.js';

/**
 * What a patient summary is made of, read as the caller: the patient's resources of the summary's
 * types (one search by `_compartment`, the AccessPolicy and SMART scopes narrowing it as any search
 * of theirs), and the resources they reference (Practitioners, Organizations, Medications...),
 * read through the guarded repository, which leaves out what the caller may not read.
 */

/** A summary reads at most this many of the patient's resources (a summary, not an export). */
export const MAX_SUMMARY_RESOURCES = 10_000;
/** References are followed this many steps from the patient's resources (a PractitionerRole's Organization). */
const REFERENCE_DEPTH = 3;

/** The patient's resources of the summary's types that the caller may see, oldest first. */
export async function patientRecords(ctx: RequestContext, patientId: string): Promise<Resource[]> {
  const types = SUMMARY_TYPES.filter((type) => policyAllowsType(ctx.identity, type));
  if (types.length === 0) return [];
  const services = searchServicesFor(ctx);
  const params: [string, string][] = [
    ['_compartment', `Patient/${patientId}`],
    ['_sort', '_lastUpdated'],
    ['_count', String(MAX_COUNT)],
  ];
  const records: Resource[] = [];
  let cursor: string | undefined;
  do {
    const result = await search(services, types, cursor ? [...params, ['_cursor', cursor]] : params);
    for (const row of result.matches) records.push(JSON.parse(row.text) as Resource);
    if (records.length > MAX_SUMMARY_RESOURCES) {
      throw errors.tooCostly(`A patient summary covers at most ${MAX_SUMMARY_RESOURCES} resources, and this patient has more: use Patient/$everything`);
    }
    const next = result.paging.next;
    cursor = next && 'cursor' in next ? next.cursor : undefined;
  } while (cursor);
  return records;
}

/**
 * The resources `from` reference, and those they reference in turn (up to REFERENCE_DEPTH steps),
 * that the caller may read, keyed `Type/id`. Resources already in `known` are not read again.
 * Another patient, and resources in another patient's compartment only, are left out: a summary
 * shows one patient's data.
 */
export async function referencedResources(
  ctx: RequestContext,
  from: readonly Resource[],
  known: ReadonlySet<string>,
  patientId: string,
): Promise<Map<string, Resource>> {
  const found = new Map<string, Resource>();
  const seen = new Set(known);
  let frontier: Resource[] = [...from];
  for (let depth = 0; depth < REFERENCE_DEPTH && frontier.length > 0; depth++) {
    const keys: ReadKey[] = [];
    for (const resource of frontier) {
      for (const key of localReferences(resource, ctx.config.fhirBaseUrl)) {
        const text = keyOf(key);
        if (seen.has(text)) continue;
        seen.add(text);
        keys.push(key);
      }
    }
    if (keys.length === 0) break;
    const versions = await ctx.repo.readVersions(keys);
    frontier = [];
    for (const [key, version] of versions) {
      if (version.deleted || version.text === null) continue;
      const resource = JSON.parse(version.text) as Resource;
      if (!belongsToSummary(resource, patientId)) continue;
      found.set(key, resource);
      frontier.push(resource);
    }
  }
  return found;
}

function belongsToSummary(resource: Resource, patientId: string): boolean {
  if (resource.resourceType === 'Patient') return resource.id === patientId;
  const patients = compartmentPatientIds(resource);
  return patients.length === 0 || patients.includes(patientId);
}

/**
 * The `Type/id` references anywhere in a resource (relative, or absolute on this server's base);
 * contained (`#id`), `urn:` and other servers' references name nothing to read.
 */
export function localReferences(resource: Resource, fhirBase: string): ReadKey[] {
  const keys: ReadKey[] = [];
  const prefix = `${fhirBase}/`;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      value.forEach(visit);
      return;
    }
    if (!isRecord(value)) return;
    for (const [name, child] of Object.entries(value)) {
      if (name === 'reference' && typeof child === 'string') {
        const local = child.startsWith(prefix) ? child.slice(prefix.length) : child;
        const match = TYPE_AND_ID.exec(local);
        if (match) keys.push({ resourceType: match[1], id: match[2] });
      } else if (name !== 'contained') {
        visit(child);
      }
    }
  };
  visit(resource);
  return keys;
}
