import { isResourceType } from '../../fhir/definitions.js';
import { filterCondition, type Filter } from '../plan/filters.js';
import { resolveParameter } from '../query/conditions.js';
import { findParameter } from '../query/conditions/lookup.js';
import type { SqlArgs } from '../../db/sql-args.js';
import { CHAIN_CANDIDATES_MAX, chainAt } from './chain-driven.js';
import { freshContext, type DrivenSearch } from './driven.js';
import { drivenWhere } from './key-driven.js';

/**
 * The most resources of a chain's target type read to find its matching targets: twice the
 * referencing resources the longest walk probes (SORTED_CHAIN_CANDIDATES_MAX), as reading a target
 * and probing its condition costs about half what probing a chain on a referencing resource does
 * (its reference row, then its target's).
 */
export const CHAIN_TARGETS_MAX = 102_400;

/**
 * The candidates of a page (or count) of one project whose chain readChain could not read, as its
 * target's condition is not index rows (`subject:Patient.gender:missing=true`, `gender:not=male`,
 * `_lastUpdated=ge..`, a chain of two steps), when its matching targets and their references are
 * few: the resources referencing them, found from the target side (undefined when they are not few).
 * - The target type's resources of the project, at most CHAIN_TARGETS_MAX of them (in its
 *   (lastUpdated, id) index), the condition probed on each; each target type of an untyped chain
 *   whose parameter it knows. Found on more, or with more than CHAIN_CANDIDATES_MAX matches, it
 *   does not apply: common targets' referencing resources come early in a walk.
 * - Their reference rows of the chain's code from the searched type, by the (project, target)
 *   index, at most CHAIN_CANDIDATES_MAX.
 * Without it, a chain no resource meets walked 51,200 resources probing it and then ran
 * the general statement, which without statistics started from every reference of the code.
 */
export async function chainTargetCandidates(search: DrivenSearch, filters: readonly Filter[]): Promise<string[] | undefined> {
  const chain = filters[chainAt(filters)];
  if (!chain || chain.resolved.kind !== 'chain') return undefined;
  const dot = chain.resolved.dot;
  const [code, typed] = chain.name.slice(0, dot).split(':');
  const types = typed !== undefined ? [typed] : targetTypes(search, code, chain.name);
  const ids = new Set<string>();
  for (const type of types) {
    const target = targetFilter(search, chain.name.slice(dot + 1), chain.value, type);
    if (!target) continue;
    const targets = await matchingTargets(search, type, target);
    const referencing = targets === 'many' ? undefined : await referencingResources(search, type, code, targets);
    if (!referencing) return undefined;
    for (const id of referencing) ids.add(id);
    if (ids.size > CHAIN_CANDIDATES_MAX) return undefined;
  }
  return [...ids];
}

/**
 * The conditions of a page (or count) read from chainTargetCandidates' `ids`: the search's every
 * filter, the chain too, tested on each (drivenWhere), so the page and its order are the general
 * statement's.
 */
export function chainTargetsDriven(search: DrivenSearch, filters: readonly Filter[], ids: readonly string[]): { args: SqlArgs; where: string } {
  const ctx = freshContext(search);
  const source =
    `SELECT ${ctx.args.add(search.projectId)}::text AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", v AS id` +
    ` FROM unnest(${ctx.args.add(ids, 'text[]')}) v`;
  return drivenWhere(search, filters, ctx, source);
}

/** The resource types the reference parameter `code` of the searched type may point to. */
function targetTypes(search: DrivenSearch, code: string, name: string): string[] {
  const targets = findParameter(code, [search.type], name, search.ctx.parameters).target ?? [];
  return targets.flatMap((type) => (type !== null && isResourceType(type) ? [type] : []));
}

/**
 * The chain's rest as a filter of the target type, or undefined when the type has no such
 * parameter or the caller may not read it (the chain looks into no target of it).
 */
function targetFilter(search: DrivenSearch, name: string, value: string, type: string): Filter | undefined {
  if (search.ctx.mayRead?.(type) === false) return undefined;
  try {
    return { name, value, resolved: resolveParameter(name, [type], search.ctx.parameters) };
  } catch {
    return undefined;
  }
}

/**
 * The ids of the project's live resources of `type` that meet `target`, or 'many' when the type
 * has more than CHAIN_TARGETS_MAX resources there or more than CHAIN_CANDIDATES_MAX of them match.
 * One walk of the type's (lastUpdated, id) index, planned once; the row past the bound
 * (`n`) tells that the type has more.
 */
async function matchingTargets(search: DrivenSearch, type: string, target: Filter): Promise<string[] | 'many'> {
  const ctx = freshContext(search);
  const condition = filterCondition(target, [type], 't', { ...ctx, perRow: true });
  const most = ctx.args.add(CHAIN_TARGETS_MAX);
  const walked =
    `SELECT t.*, row_number() OVER (ORDER BY t."lastUpdated", t.id) AS n FROM resource t` +
    ` WHERE t."projectId" = ${ctx.args.add(search.projectId)} AND t."resourceType" = ${ctx.args.add(type)}` +
    ` ORDER BY t."lastUpdated", t.id LIMIT ${most} + 1`;
  const sql =
    `SELECT t.id, t.n > ${most} AS past FROM (${walked}) t` +
    ` WHERE t.n > ${most} OR (NOT t.deleted AND (${condition}) IS TRUE) LIMIT ${ctx.args.add(CHAIN_CANDIDATES_MAX + 2)}`;
  const rows = await search.services.db.query<{ id: string; past: boolean }>(sql, ctx.args.values, { planOnce: true });
  if (rows.length > CHAIN_CANDIDATES_MAX || rows.some(({ past }) => past)) return 'many';
  return rows.map(({ id }) => id);
}

/**
 * The resources of the searched type whose `code` references one of `targets` of `type` (each
 * target's rows by one probe of the (project, target) index), or undefined when more than
 * CHAIN_CANDIDATES_MAX reference rows do.
 */
async function referencingResources(search: DrivenSearch, type: string, code: string, targets: string[]): Promise<string[] | undefined> {
  if (targets.length === 0) return [];
  const ctx = freshContext(search);
  const sql =
    `SELECT c."resourceId" AS id FROM unnest(${ctx.args.add(targets, 'text[]')}) g(id) CROSS JOIN LATERAL (SELECT ri."resourceId" FROM reference_index ri` +
    ` WHERE ri."projectId" = ${ctx.args.add(search.projectId)} AND ri."targetType" = ${ctx.args.add(type)} AND ri."targetId" = g.id` +
    ` AND ri.code = ${ctx.args.add(code)} AND ri."resourceType" = ${ctx.args.add(search.type)} OFFSET 0) c LIMIT ${ctx.args.add(CHAIN_CANDIDATES_MAX + 1)}`;
  const rows = await search.services.db.query<{ id: string }>(sql, ctx.args.values, { planOnce: true });
  return rows.length > CHAIN_CANDIDATES_MAX ? undefined : rows.map(({ id }) => id);
}
