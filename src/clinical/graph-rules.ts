import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { errors } from '../fhir/outcome.js';
import type { OperationOutcomeIssue, Resource } from '../fhir/types.js';
import { compartmentPatientIds } from '../indexing/compartment-rows.js';
import type { RequestContext } from '../operations/context.js';
import { errorsAgainstProfile } from '../validation/profiles/check.js';

/**
 * The rules a GraphDefinition's link target sets on the resources it leads to: `compartment`
 * rules (the Patient compartment, as the R4 CompartmentDefinition defines it) comparing each
 * resource with the one the link starts from, and `profile`, a profile each must conform to.
 * A resource that breaks a `condition` rule is simply not that target's; one that breaks a
 * `requirement` rule or the profile is left out too, with a warning saying which rule, so the
 * answer still holds what does conform.
 */

export interface CompartmentRule {
  use?: string;
  code?: string;
  rule?: string;
  expression?: string;
}

export interface RuledTarget {
  profile?: string;
  compartment?: CompartmentRule[];
}

const RULES = new Set(['identical', 'matching', 'different', 'custom']);

/** The resources of `candidates` that meet the target's rules; a warning for each left out by a requirement or the profile. */
export async function admitted(ctx: RequestContext, from: Resource, target: RuledTarget, candidates: Resource[], at: string, warnings: OperationOutcomeIssue[]): Promise<Resource[]> {
  const rules = (target.compartment ?? []).map((rule, index) => checkedRule(rule, `${at}.compartment[${index}]`));
  if (candidates.length === 0 || (rules.length === 0 && target.profile === undefined)) return candidates;
  const source = patientsOf(from);
  const kept: Resource[] = [];
  let profileKnown = true;
  for (const resource of candidates) {
    const broken = rules.find((rule) => !meets(rule, source, from, resource));
    if (broken) {
      if (broken.use !== 'condition') warnings.push(warning(`From ${keyOf(from)}, ${keyOf(resource)} breaks the compartment rule ${broken.rule} (Patient) of GraphDefinition${broken.at}, and is left out`, broken.at));
      continue;
    }
    if (target.profile !== undefined && profileKnown) {
      const found = await errorsAgainstProfile(resource, target.profile, { projectId: ctx.identity.projectId, db: ctx.database });
      if (found === undefined) {
        profileKnown = false;
        warnings.push(warning(`The profile ${target.profile} of GraphDefinition${at} is not known here: the resources it leads to were not checked against it`, `${at}.profile`));
      } else if (found.length > 0) {
        warnings.push(warning(`From ${keyOf(from)}, ${keyOf(resource)} does not conform to the profile ${target.profile} of GraphDefinition${at} (${found[0].details?.text ?? ''}), and is left out`, `${at}.profile`));
        continue;
      }
    }
    kept.push(resource);
  }
  return kept;
}

/** The starting resource must conform to the GraphDefinition's `profile`: otherwise the graph does not apply to it (400), as for another `start` type. */
export async function assertStartProfile(ctx: RequestContext, root: Resource, profile: string | undefined, warnings: OperationOutcomeIssue[]): Promise<void> {
  if (profile === undefined) return;
  const found = await errorsAgainstProfile(root, profile, { projectId: ctx.identity.projectId, db: ctx.database });
  if (found === undefined) {
    warnings.push(warning(`The GraphDefinition's profile ${profile} is not known here: ${keyOf(root)} was not checked against it`, '.profile'));
  } else if (found.length > 0) {
    const shown = found.slice(0, 3).map((one) => one.details?.text ?? '').join('; ');
    throw errors.invalid(`${keyOf(root)} does not conform to the GraphDefinition's profile ${profile}: ${shown}`, 'GraphDefinition.profile');
  }
}

interface Rule extends CompartmentRule {
  rule: string;
  at: string;
}

/** A compartment rule as the GraphDefinition states it, or 400 naming what is wrong. */
function checkedRule(rule: CompartmentRule, at: string): Rule {
  if (rule.code !== 'Patient') throw errors.invalid(`Only the Patient compartment is known here; the GraphDefinition names ${JSON.stringify(rule.code)}`, `GraphDefinition${at}.code`);
  if (!rule.rule || !RULES.has(rule.rule)) throw errors.invalid(`The compartment rule must be identical, matching, different or custom, not ${JSON.stringify(rule.rule)}`, `GraphDefinition${at}.rule`);
  if (rule.use !== undefined && rule.use !== 'condition' && rule.use !== 'requirement') {
    throw errors.invalid(`The compartment rule's use must be condition or requirement, not ${JSON.stringify(rule.use)}`, `GraphDefinition${at}.use`);
  }
  if (rule.rule === 'custom' && typeof rule.expression !== 'string') throw errors.invalid('A custom compartment rule needs an expression (FHIRPath)', `GraphDefinition${at}.expression`);
  return { ...rule, rule: rule.rule, at };
}

/**
 * identical and matching: the resource is in the compartment of a patient the source is in
 * (references are compared once resolved to `Patient/id`, so the two rules are the same here);
 * different: of none of them; custom: the expression, evaluated on the resource with `%source`
 * the resource the link starts from, is true.
 */
function meets(rule: Rule, source: ReadonlySet<string>, from: Resource, resource: Resource): boolean {
  if (rule.rule === 'custom') return customRule(rule, from, resource);
  const patients = patientsOf(resource);
  const shared = [...patients].some((id) => source.has(id));
  return rule.rule === 'different' ? !shared : shared;
}

function customRule(rule: Rule, from: Resource, resource: Resource): boolean {
  try {
    const result = fhirpath.evaluate(resource, rule.expression!, { source: from }, r4Model) as unknown[];
    return result.length === 1 && result[0] === true;
  } catch (error) {
    throw errors.invalid(`The compartment rule's expression "${rule.expression}" is not valid FHIRPath: ${(error as Error).message}`, `GraphDefinition${rule.at}.expression`);
  }
}

/** The patients whose compartment a resource is in: a Patient's own, else its compartment references. */
function patientsOf(resource: Resource): Set<string> {
  return new Set(resource.resourceType === 'Patient' ? [String(resource.id)] : compartmentPatientIds(resource));
}

const keyOf = (resource: Resource) => `${resource.resourceType}/${resource.id}`;

function warning(text: string, at: string): OperationOutcomeIssue {
  return { severity: 'warning', code: 'business-rule', details: { text }, expression: [`GraphDefinition${at}`] };
}
