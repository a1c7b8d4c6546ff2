import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { RequestContext } from '../operations/context.js';
import type { Operation } from '../operations/registry.js';
import { search, searchServicesFor } from '../search/service.js';
import { buildSummaryDocument } from './document.js';
import { patientRecords, referencedResources } from './records.js';
import { sectionOf } from './sections.js';

/**
 * `Patient/{id}/$summary` (IPS 1.1.0, http://hl7.org/fhir/uv/ips/OperationDefinition-summary.html):
 * the International Patient Summary of one patient, built from what the caller may read.
 */

/** Composition.author may name these; a profile of another type (a ClientApplication) cannot author. */
const AUTHOR_TYPES = new Set(['Practitioner', 'PractitionerRole', 'Organization', 'Patient', 'RelatedPerson', 'Device']);

/** The profile the document follows, which the operation's `profile` parameter may name (with no version or this one). */
const IPS_BUNDLE_PROFILE = 'http://hl7.org/fhir/uv/ips/StructureDefinition/Bundle-uv-ips';
const IPS_VERSION = '1.1.0';

export const patientSummaryOperation: Operation<{ identifier?: string; profile?: string }, { return: Resource }> = {
  definition: ownOperationDefinition('Patient-summary.json'),
  async check(input) {
    if (input.profile !== undefined && input.profile !== IPS_BUNDLE_PROFILE && input.profile !== `${IPS_BUNDLE_PROFILE}|${IPS_VERSION}`) {
      throw errors.invalid(`profile ${input.profile} is not offered: the summary follows IPS ${IPS_VERSION}, profile ${IPS_BUNDLE_PROFILE}`, 'profile');
    }
  },
  async handler(input, { ctx, id }) {
    const patient = id ? await readPatient(ctx, id, input.identifier) : await patientByIdentifier(ctx, input.identifier);
    // Records no section lists (entered in error, a Consent that is no advance directive) bring nothing in.
    const records = (await patientRecords(ctx, patient.id!)).filter((record) => sectionOf(record) !== undefined);
    const author = await callerProfile(ctx);
    const known = new Set([`Patient/${patient.id}`, ...records.map((r) => `${r.resourceType}/${r.id}`)]);
    if (author) known.add(`${author.resourceType}/${author.id}`);
    const referenced = await referencedResources(ctx, [patient, ...records, ...(author ? [author] : [])], known, patient.id!);
    return { return: buildSummaryDocument({ patient, author, records, referenced, fhirBase: ctx.config.fhirBaseUrl }) };
  },
};

async function readPatient(ctx: RequestContext, id: string, identifier: string | undefined): Promise<Resource> {
  if (identifier !== undefined) throw errors.invalid('identifier names the patient of Patient/$summary at type level; Patient/{id}/$summary takes none', 'Parameters.parameter');
  return ctx.repo.readResource('Patient', id);
}

/** IPS's type-level form: the one patient the caller may read with this identifier (a token: `system|value`). */
async function patientByIdentifier(ctx: RequestContext, identifier: string | undefined): Promise<Resource> {
  if (!identifier) throw errors.invalid('Patient/$summary at type level needs identifier (system|value) to name the patient', 'Parameters.parameter');
  const result = await search(searchServicesFor(ctx), 'Patient', [['identifier', identifier], ['_count', '2']]);
  if (result.matches.length === 0) throw errors.notFound(`No patient with identifier ${identifier}`);
  if (result.matches.length > 1) throw errors.invalid(`Several patients have identifier ${identifier}: call Patient/{id}/$summary`, 'Parameters.parameter');
  return JSON.parse(result.matches[0].text) as Resource;
}

/** The caller's profile when it is a resource that may author a Composition and the caller may read it. */
async function callerProfile(ctx: RequestContext): Promise<Resource | undefined> {
  const [resourceType, id] = ctx.identity.profile?.split('/') ?? [];
  if (!resourceType || !id || !AUTHOR_TYPES.has(resourceType)) return undefined;
  const found = await ctx.repo.readVersions([{ resourceType, id }]);
  const text = found.get(`${resourceType}/${id}`)?.text;
  return text ? (JSON.parse(text) as Resource) : undefined;
}
