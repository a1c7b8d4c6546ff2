import type { Identity } from '../../identity/identity.js';
import { typeCriteria, typesNotReadEverywhere } from '../../identity/policy.js';
import { compileParameter, resolveParameter } from '../query/conditions.js';
import { selectsByKey } from '../query/conditions/keys.js';
import { type CompileContext } from '../query/conditions/types.js';
import { scopeSql, type Scope } from '../../storage/project-scope.js';

/**
 * How AccessPolicy criteria are tested on the resources of a statement:
 *  - 'probe': every criterion is probed per resource through its index table's primary key
 *    (CompileContext.perRow): the statement's resources are few, read by primary key (driven
 *    pages, included resources, a patient's record);
 *  - 'probe-non-keys': a criterion that selects by a key (a reference to given resources, an
 *    identifier: `Observation?subject=%patient`) stays a condition the planner may start from,
 *    every other one (`Observation?status=final`) is probed per resource. A policy narrows a type
 *    by a broad value that can never drive a page; tested through the value index, whose
 *    resourceId comes after the system, each resource read every row of the value up to its own
 *    (a page of a member's `Observation?_sort=-_lastUpdated` read every `status=final` row per
 *    Observation).
 */
export type CriteriaTest = 'probe' | 'probe-non-keys';

/**
 * What every search of `typeList` asks before its parameters: the type, the project, not deleted,
 * the AccessPolicy's criteria (tested as `criteria` says).
 */
export function baseConditions(identity: Identity, typeList: readonly string[] | undefined, scope: Scope, ctx: CompileContext, criteria: CriteriaTest): string[] {
  const { args } = ctx;
  const where: string[] = [];
  if (typeList) {
    where.push(
      typeList.length === 1
        ? `r."resourceType" = ${args.add(typeList[0])}`
        : `r."resourceType" IN (${typeList.map((t) => args.add(t)).join(', ')})`,
    );
  } else {
    const hidden = typesNotReadEverywhere(identity);
    if (hidden.length > 0) where.push(`r."resourceType" NOT IN (${hidden.map((t) => args.add(t)).join(', ')})`);
  }
  const scoped = scopeSql('r', 'projectId', scope, args);
  if (scoped) where.push(scoped);
  where.push('NOT r.deleted');
  where.push(...criteriaConditions(identity, typeList ?? [], ctx, criteria));
  return where;
}

/**
 * The AccessPolicy's criteria (and SMART scopes' conditions) of each type in `types` on a
 * resource `r` that may be of any of them, each applying to its own type only; tested as
 * `criteria` says. The one way criteria become SQL: searches, included resources and a patient's
 * record all compile them here.
 */
export function criteriaConditions(identity: Identity, types: readonly string[], ctx: CompileContext, criteria: CriteriaTest): string[] {
  const conditions: string[] = [];
  for (const type of types) {
    const condition = policyCondition(identity, type, ctx, criteria);
    if (!condition) continue;
    conditions.push(types.length === 1 ? `(${condition})` : `(r."resourceType" <> ${ctx.args.add(type)} OR (${condition}))`);
  }
  return conditions;
}

/**
 * The caller's AccessPolicy criteria for `type` and its SMART scopes' conditions as one SQL
 * condition on `alias` (`r` unless a chain or `_has` tests them on the resources it looks into),
 * if any: the policy's parameters all hold, and one of the scopes' groups.
 * `criteria`: how each is tested (CriteriaTest).
 */
export function policyCondition(identity: Identity, type: string, ctx: CompileContext, criteria: CriteriaTest, alias = 'r'): string | undefined {
  const narrowed = typeCriteria(identity, type);
  if (!narrowed) return undefined;
  // The policy's own criteria may look into types it does not let the caller read, or reads in part.
  const own = { ...ctx, mayRead: undefined, criteriaOf: undefined };
  const probed = { ...own, perRow: true };
  const contextOf = (name: string, value: string): CompileContext => {
    if (criteria === 'probe') return probed;
    return selectsByKey(name, value, resolveParameter(name, [type], ctx.parameters)) ? own : probed;
  };
  const all = (params: readonly (readonly [string, string])[]) =>
    params.map(([name, value]) => compileParameter(name, value, [type], alias, contextOf(name, value)));
  const conditions = all(narrowed.all);
  if (narrowed.anyOf) {
    conditions.push(narrowed.anyOf.length === 0 ? 'FALSE' : narrowed.anyOf.map((group) => `(${all(group).join(' AND ')})`).join(' OR '));
  }
  return conditions.map((condition) => `(${condition})`).join(' AND ');
}
