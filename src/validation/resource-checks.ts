import type { SqlExecutor } from '../db/database.js';
import { OperationOutcomeError, outcome } from '../fhir/outcome.js';
import type { OperationOutcomeIssue, Resource } from '../fhir/types.js';

/**
 * Checks of a resource that need more than its JSON and the base definitions: bindings checked
 * with the terminology engine, the profiles a project holds. The layers that know how (terminology,
 * profiles) sit above storage, so the composition root registers them here; every write and
 * `$validate` run the same list, so a write, a Bundle entry and `$validate` report alike.
 */
export interface CheckContext {
  /** The project whose definitions (profiles, value sets, code systems) apply. */
  readonly projectId: string;
  /** Where the check's reads go: the write's transaction when there is one. */
  readonly db: SqlExecutor;
  /** Also report warnings and information (`$validate`); a write needs errors only. */
  readonly warnings: boolean;
  /** Profiles asked for besides the resource's own meta.profile (`$validate`'s `profile`). */
  readonly profiles?: readonly string[];
}

export type ResourceCheck = (resource: Resource, context: CheckContext) => Promise<OperationOutcomeIssue[]>;

export type BindingStrength = 'required' | 'extensible' | 'preferred';

/**
 * A binding a profile adds whose value set the shipped definitions cannot expand (one the project
 * stores, say): the profile walk finds the value, the terminology engine judges it. Extensible and
 * preferred ones are collected for `$validate` only.
 */
export interface ProfileBinding {
  /** The Coding or CodeableConcept; a bare code as `{ code }` (its systems are the value set's). */
  readonly value: Record<string, unknown>;
  readonly type: 'code' | 'Coding' | 'CodeableConcept';
  readonly strength: BindingStrength;
  /** Canonical url of the bound value set, without version. */
  readonly valueSet: string;
  readonly expression: string;
  readonly profile: string;
}

export type ProfileBindingCheck = (bound: readonly ProfileBinding[], context: CheckContext) => Promise<OperationOutcomeIssue[]>;

const checks: ResourceCheck[] = [];
let profileBindingCheck: ProfileBindingCheck | undefined;

/** Sets who judges the bindings profiles add (the terminology engine, registered by the composition root). */
export function registerProfileBindingCheck(check: ProfileBindingCheck): void {
  profileBindingCheck = check;
}

/** The issues of the bindings profiles add; none when no judge is registered. */
export function checkProfileBindings(bound: readonly ProfileBinding[], context: CheckContext): Promise<OperationOutcomeIssue[]> {
  return bound.length > 0 && profileBindingCheck ? profileBindingCheck(bound, context) : Promise.resolve([]);
}

/** Adds a check run on every write and by `$validate`, in the order registered. */
export function registerResourceCheck(check: ResourceCheck): void {
  if (!checks.includes(check)) checks.push(check);
}

export function hasResourceChecks(): boolean {
  return checks.length > 0;
}

/** Every issue the registered checks find, in their order. */
export async function runResourceChecks(resource: Resource, context: CheckContext): Promise<OperationOutcomeIssue[]> {
  const found: OperationOutcomeIssue[] = [];
  for (const check of checks) found.push(...(await check(resource, context)));
  return found;
}

/** Throws a 400 OperationOutcome with every error the checks find; warnings never refuse a write. */
export async function assertResourceChecks(resource: Resource, context: Omit<CheckContext, 'warnings'>): Promise<void> {
  if (checks.length === 0) return;
  const failed = (await runResourceChecks(resource, { ...context, warnings: false })).filter(isError);
  if (failed.length > 0) throw new OperationOutcomeError(outcome(failed), 400);
}

function isError(found: OperationOutcomeIssue): boolean {
  return found.severity === 'error' || found.severity === 'fatal';
}
