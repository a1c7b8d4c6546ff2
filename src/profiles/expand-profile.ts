import { errors, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { expandProfile } from '../validation/profiles/expand.js';
import { projectProfiles } from '../validation/profiles/project-profiles.js';
import { SnapshotError } from '../validation/profiles/snapshot.js';

/**
 * `StructureDefinition/$expand-profile` (Medplum's operation): the profile named by `url` with
 * its snapshot, and the profiles and extension definitions it uses, as a searchset Bundle (the
 * shape Medplum answers, so its form builders read it). Definitions of the caller's project come
 * first, then the shipped HL7 ones; the profile is the first entry.
 */
export const expandProfileOperation: Operation<{ url?: string }, { return: Resource }> = {
  definition: ownOperationDefinition('StructureDefinition-expand-profile.json'),
  readsQueryOnPost: true,
  async check(input) {
    if (!input.url) throw errors.invalid('$expand-profile needs the url of a profile: ?url=<canonical> or a Parameters body with url', 'Parameters.parameter');
  },
  async handler(input, { ctx }) {
    const url = input.url!;
    const library = await projectProfiles(ctx.transaction ?? ctx.database, ctx.identity.projectId);
    let expanded;
    try {
      expanded = expandProfile(library, url);
    } catch (error) {
      if (!(error instanceof SnapshotError)) throw error;
      throw new OperationOutcomeError(outcome([{ severity: 'error', code: 'invalid', details: { text: `Cannot generate the snapshot of ${url}: ${error.message}` }, expression: [error.expression] }]), 400);
    }
    if (!expanded) throw errors.notFound(`Unknown profile ${url}: no StructureDefinition of this project or of HL7 R4 has this url`);
    const entries = [expanded.profile, ...expanded.used].map((sd) => ({
      fullUrl: library.holds(sd.url) && sd.id ? `${ctx.config.fhirBaseUrl}/StructureDefinition/${sd.id}` : sd.url,
      resource: sd as Resource,
    }));
    return { return: { resourceType: 'Bundle', type: 'searchset', total: entries.length, entry: entries } };
  },
};

