import { getSearchParametersFor, isResourceType } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import type { CompileContext, CompileParameter } from './types.js';
import { scopeSql } from '../../../storage/project-scope.js';
import { findParameter } from './lookup.js';

/**
 * Chains and `_has` follow references to other resources, whose parameters the caller's
 * `compileParameter` compiles (passed in, so that this file and the dispatching one do not import
 * each other).
 */

const MAX_CHAIN_DEPTH = 4;

function nextDepth(ctx: CompileContext, name: string): CompileContext {
  if (ctx.depth >= MAX_CHAIN_DEPTH) throw errors.invalid(`Chain "${name}" is too deep: at most ${MAX_CHAIN_DEPTH} levels`, name);
  return { ...ctx, depth: ctx.depth + 1 };
}

/**
 * `subject:Patient.name=x`: a reference whose target matches the rest of the chain. Targets are
 * looked for in the project of the referencing resource (references never cross projects), which
 * also lets every level use the project-first indexes.
 */
export function compileChain(
  name: string,
  dot: number,
  value: string,
  types: readonly string[],
  alias: string,
  ctx: CompileContext,
  compileParameter: CompileParameter,
): string {
  const head = name.slice(0, dot);
  const rest = name.slice(dot + 1);
  const [code, typeModifier] = head.split(':');
  const param = findParameter(code, types, name, ctx.parameters);
  if (param.type !== 'reference') throw errors.invalid(`Cannot chain "${name}": ${code} is not a reference parameter`, name);
  if (typeModifier !== undefined && !isResourceType(typeModifier)) {
    throw errors.invalid(`Unknown resource type "${typeModifier}" in chain "${name}"`, name);
  }
  const restCode = rest.split(/[:.]/)[0];
  const candidates = typeModifier ? [typeModifier] : (param.target ?? []).filter((t) => t !== null && isResourceType(t));
  const targets = candidates.filter(
    (t) => getSearchParametersFor(t).some((p) => p.code === restCode) || ctx.parameters?.find(t, restCode) || restCode.startsWith('_'),
  );
  if (targets.length === 0) {
    throw errors.invalid(`Unknown search parameter "${restCode}" on the targets of ${code} in chain "${name}"`, name);
  }
  const inner = nextDepth(ctx, name);
  const ri = `c${inner.depth}`;
  const t = `t${inner.depth}`;
  const perType = targets.map((type) => {
    const condition = compileParameter(rest, value, [type], t, inner);
    return `(${t}."resourceType" = ${ctx.args.add(type)} AND ${condition})`;
  });
  const targetScope = scopeSql(t, 'projectId', ctx.scope, ctx.args);
  return (
    `EXISTS (SELECT 1 FROM reference_index ${ri} JOIN resource ${t} ON ${t}."resourceType" = ${ri}."targetType" AND ${t}.id = ${ri}."targetId"` +
    ` WHERE ${ri}."projectId" = ${alias}."projectId" AND ${ri}."resourceType" = ${alias}."resourceType" AND ${ri}."resourceId" = ${alias}.id` +
    ` AND ${ri}.code = ${ctx.args.add(code)} AND ${t}."projectId" = ${ri}."projectId" AND NOT ${t}.deleted${targetScope ? ` AND ${targetScope}` : ''}` +
    ` AND (${perType.join(' OR ')}))`
  );
}

/**
 * `_has:Observation:patient:code=x`: some Observation of the same project whose `patient`
 * references this resource matches.
 */
export function compileHas(name: string, value: string, alias: string, ctx: CompileContext, compileParameter: CompileParameter): string {
  const match = /^_has:([A-Za-z]+):([A-Za-z0-9_-]+):(.+)$/.exec(name);
  if (!match || !isResourceType(match[1])) {
    throw errors.invalid(`Invalid _has "${name}": use _has:Type:referenceParameter:parameter`, name);
  }
  const [, type, code, rest] = match;
  const param = findParameter(code, [type], name, ctx.parameters);
  if (param.type !== 'reference') throw errors.invalid(`In "${name}", ${code} is not a reference parameter of ${type}`, name);
  const inner = nextDepth(ctx, name);
  const ri = `h${inner.depth}`;
  const s = `s${inner.depth}`;
  const condition = compileParameter(rest, value, [type], s, inner);
  const sourceScope = scopeSql(s, 'projectId', ctx.scope, ctx.args);
  return (
    `EXISTS (SELECT 1 FROM reference_index ${ri} JOIN resource ${s} ON ${s}."resourceType" = ${ri}."resourceType" AND ${s}.id = ${ri}."resourceId"` +
    ` WHERE ${ri}."targetType" = ${alias}."resourceType" AND ${ri}."targetId" = ${alias}.id AND ${ri}."resourceType" = ${ctx.args.add(type)}` +
    ` AND ${ri}.code = ${ctx.args.add(code)} AND ${ri}."projectId" = ${alias}."projectId" AND ${s}."projectId" = ${ri}."projectId"` +
    ` AND NOT ${s}.deleted${sourceScope ? ` AND ${sourceScope}` : ''}` +
    ` AND ${condition})`
  );
}
