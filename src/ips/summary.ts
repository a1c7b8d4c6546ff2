import type { Resource } from '../fhir/types.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { RequestContext } from '../operations/context.js';
import type { Operation } from '../operations/registry.js';
import { buildSummaryDocument } from './document.js';
import { patientRecords, referencedResources } from './records.js';

/**
 * `Patient/{id}/$summary` (IPS 1.1.0, http://hl7.org/fhir/uv/ips/OperationDefinition-summary.html):
 * the International Patient Summary of one patient, built from what the caller may read.
 */

/** Composition.author may name these; a profile of another type (a ClientApplication) cannot author. */
const AUTHOR_TYPES = new Set(['Practitioner', 'PractitionerRole', 'Organization', 'Patient', 'RelatedPerson', 'Device']);

export const patientSummaryOperation: Operation<Record<string, never>, { return: Resource }> = {
  definition: ownOperationDefinition('Patient-summary.json'),
  async handler(_input, { ctx, id }) {
    const patient = await ctx.repo.readResource('Patient', id!);
    const records = await patientRecords(ctx, patient.id!);
    const author = await callerProfile(ctx);
    const known = new Set([`Patient/${patient.id}`, ...records.map((r) => `${r.resourceType}/${r.id}`)]);
    if (author) known.add(`${author.resourceType}/${author.id}`);
    const referenced = await referencedResources(ctx, [patient, ...records, ...(author ? [author] : [])], known, patient.id!);
    return { return: buildSummaryDocument({ patient, author, records, referenced, fhirBase: ctx.config.fhirBaseUrl }) };
  },
};

/** The caller's profile when it is a resource that may author a Composition and the caller may read it. */
async function callerProfile(ctx: RequestContext): Promise<Resource | undefined> {
  const [resourceType, id] = ctx.identity.profile?.split('/') ?? [];
  if (!resourceType || !id || !AUTHOR_TYPES.has(resourceType)) return undefined;
  const found = await ctx.repo.readVersions([{ resourceType, id }]);
  const text = found.get(`${resourceType}/${id}`)?.text;
  return text ? (JSON.parse(text) as Resource) : undefined;
}
