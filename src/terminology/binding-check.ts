import { randomUUID } from 'node:crypto';
import { Database } from '../db/database.js';
import { issue, OperationOutcomeError } from '../fhir/outcome.js';
import { isRecord, type OperationOutcomeIssue, type Resource } from '../fhir/types.js';
import type { CheckContext, ProfileBindingCheck, ResourceCheck } from '../validation/resource-checks.js';
import { findBoundValues, type BindingStrength, type BoundValue } from './binding-paths.js';
import { requestCache } from './cache.js';
import { grammarCheck } from './grammar-systems.js';
import { Membership } from './membership.js';
import { findValueSet } from './resources.js';
import { terminologyDatabase } from './in-transaction.js';
import type { TerminologyCaller } from './types.js';

/**
 * Terminology bindings of Coding and CodeableConcept elements (a ResourceCheck, registered by the
 * composition root): on every write, `required` ones (an error refuses it); in `$validate`, also
 * `extensible` and `preferred` ones, as warnings. A CodeableConcept satisfies its binding when one
 * of its codings is in the value set: the others may be translations from other systems (R4
 * terminologies, "CodeableConcept"). Membership is the terminology engine's (membership.ts), with
 * the project's own value sets and code systems first. A binding that cannot be decided (a value
 * set over a code system Flint does not hold, such as SNOMED CT) never refuses a write:
 * `$validate` says it was not checked. `code` elements are the validator's (required-bindings.ts).
 */

type Verdict = 'in' | 'out' | 'unknown';

const ON_WRITE: readonly BindingStrength[] = ['required'];
const IN_VALIDATE: readonly BindingStrength[] = ['required', 'extensible', 'preferred'];
/** Verdicts kept per terminology revision and database, beyond which they are all dropped. */
const MAX_VERDICTS = 20_000;

export const bindingCheck: ResourceCheck = async (resource, context) => {
  const bound = findBoundValues(resource, context.warnings ? IN_VALIDATE : ON_WRITE);
  if (bound.length === 0) return [];
  const verdicts = await Verdicts.for(context);
  const found: OperationOutcomeIssue[] = [];
  for (const value of bound) {
    const problem = await checkBinding(value, verdicts, context.warnings);
    if (problem) found.push(problem);
  }
  return found;
};

/**
 * The bindings profiles add to value sets the shipped definitions cannot expand (a project's own,
 * registered by the composition root): judged as the base definitions' are, bare `code` elements
 * included, and the issue names the profile.
 */
export const profileBindingCheck: ProfileBindingCheck = async (bound, context) => {
  const verdicts = await Verdicts.for(context);
  const found: OperationOutcomeIssue[] = [];
  for (const { value, type, valueSet, strength, expression, profile } of bound) {
    if (strength !== 'required' && !context.warnings) continue;
    const problem = await checkBinding({ value, expression, binding: { strength, valueSet, type } }, verdicts, context.warnings);
    if (problem) found.push(withProfile(problem, profile, strength));
  }
  return found;
};

function withProfile(found: OperationOutcomeIssue, profile: string, strength: string): OperationOutcomeIssue {
  return { ...found, details: { ...found.details, text: `${found.details?.text ?? ''} (profile ${profile}, rule: ${strength} binding)` } };
}

interface Coded {
  system?: unknown;
  code?: unknown;
}

async function checkBinding(bound: BoundValue, verdicts: Verdicts, warnings: boolean): Promise<OperationOutcomeIssue | undefined> {
  const { binding, expression } = bound;
  const bare = binding.type === 'code';
  const codings = (binding.type === 'CodeableConcept' ? (Array.isArray(bound.value.coding) ? bound.value.coding : []) : [bound.value]) as Coded[];
  // A bare code has no system: the value set's code systems are searched for it.
  const coded = codings.filter((c): c is { system: string; code: string } => typeof c.code === 'string' && (bare || typeof c.system === 'string'));
  if (coded.length === 0) return noCode(bound, codings.length > 0);
  let unknown = false;
  for (const coding of coded) {
    const verdict = await verdicts.of(binding.valueSet, coding.system, coding.code);
    if (verdict === 'in') return undefined;
    if (verdict === 'unknown') unknown = true;
  }
  if (unknown) {
    if (!warnings || binding.strength !== 'required') return undefined;
    return information(`The binding of ${expression} to the value set ${binding.valueSet} was not checked: its codes cannot be expanded here`, expression);
  }
  const valueSet = binding.valueSet;
  const notIn = bare ? `The code "${coded[0].code}" is not in the value set ${valueSet}` : notInValueSet(coded, valueSet);
  if (binding.strength === 'required') {
    return issue('code-invalid', `Invalid code at ${expression}: ${notIn}, which this element requires`, expression);
  }
  return warning(`At ${expression}: ${notIn}; ${ADVICE[binding.strength]}`, expression);
}

/** "The code s|c is not in the value set V", or "None of the codes s|a, s|b is in the value set V". */
function notInValueSet(coded: { system: string; code: string }[], valueSet: string): string {
  const shown = coded.map((c) => `${c.system}|${c.code}`).join(', ');
  return coded.length === 1 ? `The code ${shown} is not in the value set ${valueSet}` : `None of the codes ${shown} is in the value set ${valueSet}`;
}

const ADVICE: Record<Exclude<BindingStrength, 'required'>, string> = {
  extensible: 'use a code from it when one fits (extensible binding)',
  preferred: 'a code from it is preferred (preferred binding)',
};

/** A bound element with no coding that has both system and code. */
function noCode({ binding, expression }: BoundValue, hasCodings: boolean): OperationOutcomeIssue | undefined {
  if (binding.strength !== 'required') return undefined;
  const what = hasCodings ? 'none of its codings has both system and code' : 'it has no coding';
  return issue('code-invalid', `Missing code at ${expression}: ${what}, and this element requires a code from the value set ${binding.valueSet}`, expression);
}

function warning(text: string, expression: string): OperationOutcomeIssue {
  return { ...issue('code-invalid', text, expression), severity: 'warning' };
}

function information(text: string, expression: string): OperationOutcomeIssue {
  return { ...issue('informational', text, expression), severity: 'information' };
}

/** Membership answers of one check, from the memory of the current terminology revision when there is one. */
class Verdicts {
  private membership: Membership;

  private constructor(
    private readonly caller: TerminologyCaller,
    private readonly db: Database,
    private readonly memory: Map<string, Promise<Verdict>> | undefined,
  ) {
    this.membership = new Membership(caller, db);
  }

  /**
   * On the database itself the terminology cache is synced once for this check (the process
   * generation, and the revision row on PostgreSQL) and verdicts are kept in it; inside a write's
   * transaction, which may hold terminology changes of its own, nothing is cached.
   */
  static async for(context: CheckContext): Promise<Verdicts> {
    const identity = { projectId: context.projectId };
    if (!(context.db instanceof Database)) return new Verdicts({ identity }, terminologyDatabase(context.db), undefined);
    const caller: TerminologyCaller = { identity, requestId: `bindings-${randomUUID()}` };
    const cache = await requestCache(caller, context.db);
    const memory = cache ? await cache.resolved('BindingVerdicts', async () => new Map<string, Promise<Verdict>>()) : undefined;
    return new Verdicts(caller, context.db, memory);
  }

  /** `system` undefined: a bare code, looked for in each of the value set's code systems. */
  of(valueSet: string, system: string | undefined, code: string): Promise<Verdict> {
    if (!this.memory) return this.compute(valueSet, system, code);
    const key = `${this.caller.identity.projectId}|${valueSet}|${system ?? ''}|${code}`;
    let verdict = this.memory.get(key);
    if (!verdict) {
      if (this.memory.size >= MAX_VERDICTS) this.memory.clear();
      verdict = this.compute(valueSet, system, code);
      this.memory.set(key, verdict);
      verdict.catch(() => this.memory?.delete(key));
    }
    return verdict;
  }

  private async compute(url: string, system: string | undefined, code: string): Promise<Verdict> {
    const valueSet = await findValueSet(this.caller, this.db, url);
    if (!valueSet) return 'unknown';
    const grammar = system === undefined ? grammarOfBareCode(valueSet) : grammarCheck(valueSet, system);
    if (grammar) {
      if (grammar(code)) return 'in';
      // A bare code outside the grammar may still be a code of the value set's other systems.
      if (system !== undefined) return 'out';
    }
    try {
      const found = await this.membership.find(valueSet, system, code);
      return found.member ? 'in' : found.reason ? 'unknown' : 'out';
    } catch (error) {
      // A value set the engine cannot evaluate (an unsupported filter, a missing import) decides nothing.
      if (error instanceof OperationOutcomeError && error.status < 500) return 'unknown';
      throw error;
    }
  }
}

/** The grammar that decides a bare code, when the value set includes a whole grammar-defined system (UCUM units in a `code`). */
function grammarOfBareCode(valueSet: Resource): ((code: string) => boolean) | undefined {
  const includes = isRecord(valueSet.compose) && Array.isArray(valueSet.compose.include) ? valueSet.compose.include : [];
  for (const include of includes) {
    const check = isRecord(include) && typeof include.system === 'string' ? grammarCheck(valueSet, include.system) : undefined;
    if (check) return check;
  }
  return undefined;
}
