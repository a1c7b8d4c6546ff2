import type { Identity } from '../../identity/identity.js';
import { typeCriteria } from '../../identity/policy.js';
import { compileParameter } from '../query/conditions.js';
import { type CompileContext } from '../query/conditions/types.js';
import { scopeSql, type Scope } from '../../storage/project-scope.js';

/**
 * What every search of `typeList` asks before its parameters: the type, the project, not deleted,
 * the AccessPolicy's criteria. `policyCtx` compiles the criteria (a driven page's resources are
 * few, read by primary key: their criteria are probed per row, see rowsExist).
 */
export function baseConditions(identity: Identity, typeList: readonly string[] | undefined, scope: Scope, ctx: CompileContext, policyCtx = ctx): string[] {
  const { args } = ctx;
  const where: string[] = [];
  if (typeList) {
    where.push(
      typeList.length === 1
        ? `r."resourceType" = ${args.add(typeList[0])}`
        : `r."resourceType" IN (${typeList.map((t) => args.add(t)).join(', ')})`,
    );
  }
  const scoped = scopeSql('r', 'projectId', scope, args);
  if (scoped) where.push(scoped);
  where.push('NOT r.deleted');
  for (const type of typeList ?? []) {
    // The AccessPolicy's criteria for a type narrow every search of it.
    const condition = policyCondition(identity, type, policyCtx);
    if (!condition) continue;
    where.push(typeList?.length === 1 ? `(${condition})` : `(r."resourceType" <> ${args.add(type)} OR (${condition}))`);
  }
  return where;
}

/**
 * The caller's AccessPolicy criteria for `type` and its SMART scopes' conditions as one SQL
 * condition on alias `r`, if any: the policy's parameters all hold, and one of the scopes' groups.
 */
export function policyCondition(identity: Identity, type: string, ctx: CompileContext): string | undefined {
  const criteria = typeCriteria(identity, type);
  if (!criteria) return undefined;
  const all = (params: readonly (readonly [string, string])[]) => params.map(([name, value]) => compileParameter(name, value, [type], 'r', ctx));
  const conditions = all(criteria.all);
  if (criteria.anyOf) {
    conditions.push(criteria.anyOf.length === 0 ? 'FALSE' : criteria.anyOf.map((group) => `(${all(group).join(' AND ')})`).join(' OR '));
  }
  return conditions.map((condition) => `(${condition})`).join(' AND ');
}
