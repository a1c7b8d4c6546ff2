import { issue, OperationOutcomeError, outcome } from '../../fhir/outcome.js';
import type { StructureDefinition } from '../../fhir/definitions.js';
import { isRecord, type OperationOutcomeIssue, type Resource } from '../../fhir/types.js';
import { checkProfileBindings, type CheckContext, type ProfileBinding } from '../resource-checks.js';
import type { PrepareContext } from '../resource-preparers.js';
import { coreDefinition } from './library.js';
import { profileInvariants } from './invariants.js';
import { projectProfiles } from './project-profiles.js';
import { refusesUnknownProfiles, UNKNOWN_PROFILES_SETTING } from './project-setting.js';
import { SnapshotError } from './snapshot.js';
import { validateAgainstProfile } from './validate.js';

const NO_ISSUES: Promise<OperationOutcomeIssue[]> = Promise.resolve([]);

/**
 * The resource check of profiles (registered by the composition root): the resource is validated
 * against each profile its `meta.profile` names and each `$validate` asks for. A resource that
 * names none costs one property read.
 */
export function profileCheck(resource: Resource, context: CheckContext): Promise<OperationOutcomeIssue[]> {
  const claimed = resource.meta?.profile;
  if (!claimed?.length && !context.profiles?.length) return NO_ISSUES;
  return checkProfiles(resource, context, [...(claimed ?? []).map((url, index) => ({ url, index })), ...(context.profiles ?? []).map((url) => ({ url, index: -1 }))]);
}

async function checkProfiles(resource: Resource, context: CheckContext, named: { url: unknown; index: number }[]): Promise<OperationOutcomeIssue[]> {
  const library = await projectProfiles(context.db, context.projectId);
  const issues: OperationOutcomeIssue[] = [];
  const unknown: { url: string; index: number }[] = [];
  const seen = new Set<string>();
  const bindings: ProfileBinding[] = [];
  for (const { url, index } of named) {
    if (typeof url !== 'string' || seen.has(url)) continue;
    seen.add(url);
    // The base definition of the type asks for nothing its structure check did not do.
    if (coreDefinition(url)?.type === resource.resourceType) continue;
    // Only constraints are profiles: a logical model or specialization named in meta.profile counts as unknown.
    const profile = library.definition(url)?.derivation === 'constraint' ? library.compiled(url) : undefined;
    if (!profile) {
      unknown.push({ url, index });
      continue;
    }
    issues.push(...validateAgainstProfile(resource, profile, library, { warnings: context.warnings, bindings }));
    issues.push(...profileInvariants(resource, profile, { warnings: context.warnings }));
  }
  issues.push(...(await checkProfileBindings(bindings, context)));
  if (unknown.length > 0) issues.push(...(await unknownProfileIssues(resource, unknown, context)));
  return context.warnings ? issues : issues.filter((found) => found.severity === 'error' || found.severity === 'fatal');
}

/**
 * The errors of a resource against one profile named outside the resource (a GraphDefinition's
 * `profile`): a profile of the project, a shipped one, or a core type's definition (which asks
 * for its type only). Undefined when no such profile is known.
 */
export async function errorsAgainstProfile(resource: Resource, url: string, context: Omit<CheckContext, 'warnings' | 'profiles'>): Promise<OperationOutcomeIssue[] | undefined> {
  const core = coreDefinition(url);
  if (core?.type) return core.type === resource.resourceType ? [] : [issue('invalid', `${resource.resourceType} is not a ${core.type} (profile ${url})`, resource.resourceType)];
  const library = await projectProfiles(context.db, context.projectId);
  const profile = library.definition(url)?.derivation === 'constraint' ? library.compiled(url) : undefined;
  if (!profile) return undefined;
  const bindings: ProfileBinding[] = [];
  const found = [...validateAgainstProfile(resource, profile, library, { warnings: false, bindings }), ...profileInvariants(resource, profile, { warnings: false })];
  found.push(...(await checkProfileBindings(bindings, { ...context, warnings: false })));
  return found.filter((one) => one.severity === 'error' || one.severity === 'fatal');
}

/** An unknown profile is accepted (a warning for `$validate`) unless the project refuses them. */
async function unknownProfileIssues(resource: Resource, unknown: { url: string; index: number }[], context: CheckContext): Promise<OperationOutcomeIssue[]> {
  const refuses = await refusesUnknownProfiles(context.db, context.projectId);
  if (!refuses && !context.warnings) return [];
  return unknown.map(({ url, index }) => ({
    severity: refuses ? 'error' : 'warning',
    code: refuses ? 'not-found' : 'informational',
    details: {
      text: refuses
        ? `Unknown profile ${url}: this project refuses profiles it cannot check (Project.setting ${UNKNOWN_PROFILES_SETTING}); store the StructureDefinition first or remove the url`
        : `Unknown profile ${url}: no StructureDefinition of this project or of HL7 R4 has this url, so the resource was not checked against it`,
    },
    expression: [index >= 0 ? `${resource.resourceType}.meta.profile[${index}]` : `${resource.resourceType}`],
  }));
}

/**
 * The preparer of StructureDefinitions (registered by the composition root): a profile written
 * with a differential only is stored with its snapshot, generated as `$expand-profile` does.
 */
export async function snapshotPreparer(resource: Resource, context: PrepareContext): Promise<Resource> {
  const sd = resource as StructureDefinition;
  if (sd.derivation !== 'constraint' || sd.snapshot?.element?.length) return resource;
  if (!isRecord(sd.differential) || !Array.isArray(sd.differential.element)) return resource;
  const library = await projectProfiles(context.db, context.projectId);
  try {
    return { ...resource, snapshot: { element: library.snapshotOf(sd) } };
  } catch (error) {
    if (error instanceof SnapshotError) {
      throw new OperationOutcomeError(outcome([{ severity: 'error', code: 'invalid', details: { text: `Cannot generate the snapshot: ${error.message}` }, expression: [error.expression] }]), 400);
    }
    throw error;
  }
}
