import { getSearchParametersFor, isResourceType, type SearchParameter } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import type { CompileContext, CompileParameter, IndexRowsCondition } from './types.js';
import { firstMatchingRow, indexRowsSource } from './shared.js';
import { scopeSql } from '../../../storage/project-scope.js';
import { checkTargetTypes, findParameter } from './lookup.js';

/**
 * Chains and `_has` follow references to other resources, whose parameters the caller's
 * `compileParameter` compiles (passed in, so that this file and the dispatching one do not import
 * each other).
 */

const MAX_CHAIN_DEPTH = 4;

/**
 * The caller's criteria of `type` (CompileContext.criteriaOf) on `alias`, a resource a chain or
 * `_has` looks into, if the type is narrowed: probed per resource, as those resources are reached
 * one at a time through their references.
 */
export function criteriaOn(type: string, alias: string, ctx: CompileContext): string | undefined {
  return ctx.criteriaOf?.(type, alias, { ...ctx, onRows: undefined, perRow: true });
}

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
  if (typeModifier !== undefined) checkTargetTypes(name, code, param, [typeModifier]);
  const restCode = rest.split(/[:.]/)[0];
  const candidates = typeModifier ? [typeModifier] : (param.target ?? []).filter((t) => t !== null && isResourceType(t));
  const known = candidates.filter(
    (t) => getSearchParametersFor(t).some((p) => p.code === restCode) || ctx.parameters?.find(t, restCode) || restCode.startsWith('_'),
  );
  if (known.length === 0) {
    throw errors.invalid(`Unknown search parameter "${restCode}" on the targets of ${code} in chain "${name}"`, name);
  }
  // An untyped chain looks only into the target types the caller may read; a typed one, or one with none left, is refused.
  const targets = known.filter((t) => ctx.mayRead?.(t) ?? true);
  if (targets.length === 0 || (typeModifier !== undefined && targets.length < known.length)) {
    throw errors.forbidden(`Your access does not allow ${known.join(', ')} resources, which chain "${name}" searches`);
  }
  const inner = nextDepth(ctx, name);
  const ri = `c${inner.depth}`;
  const t = `t${inner.depth}`;
  const targetKeys: TargetKey[] = [];
  // Probed per resource, the target's rows are reported but never read (CompileContext.rowsUnread):
  // one compile tells whether they are index rows, and a union parameter's are read once (compileIndexed).
  const probed = ctx.perRow === true && (!ctx.onRows || ctx.rowsUnread === true);
  const perType = targets.map((type) => {
    const typeArg = ctx.args.add(type);
    const found: IndexRowsCondition[] = [];
    // The target's own index rows are reported here, never to the caller's onRows (it asks for this level's).
    const onRows = (rows: IndexRowsCondition) => rows.depth === inner.depth && found.push(rows);
    const condition = compileParameter(rest, value, [type], t, { ...inner, onRows, rowsUnread: probed });
    const isRows = condition.startsWith('EXISTS (') && found.length === 1;
    // On the target's alias in both forms (reportChainRows), so that either statement uses every placeholder.
    const criteria = criteriaOn(type, t, inner);
    targetKeys.push({ typeArg, rows: isRows && !probed ? found[0] : undefined, isRows, criteria });
    return `(${t}."resourceType" = ${typeArg} AND ${condition}${criteria ? ` AND (${criteria})` : ''})`;
  });
  // The placeholders of the chain's code and project serve both forms: a statement sends only what it uses.
  const codeArg = ctx.args.add(code);
  const projectId = ctx.scope.projectIds?.length === 1 ? ctx.scope.projectIds[0] : undefined;
  const projectArg = projectId === undefined ? undefined : ctx.args.add(projectId);
  const rowsProject = projectArg ?? ctx.rowsProject;
  if (ctx.onRows && ctx.rowsUnread) reportUnreadChainRows(ctx, ri, codeArg, targetKeys);
  else if (ctx.onRows && rowsProject) reportChainRows(ctx, ri, t, codeArg, rowsProject, targetKeys);
  const targetScope = projectArg ? `${t}."projectId" = ${projectArg}` : scopeSql(t, 'projectId', ctx.scope, ctx.args);
  if (ctx.perRow) return chainProbe({ alias, ri, t, codeArg, targetScope, perType, targetKeys });
  return (
    `EXISTS (SELECT 1 FROM reference_index ${ri} JOIN resource ${t} ON ${t}."resourceType" = ${ri}."targetType" AND ${t}.id = ${ri}."targetId"` +
    ` WHERE ${ri}."projectId" = ${alias}."projectId" AND ${ri}."resourceType" = ${alias}."resourceType" AND ${ri}."resourceId" = ${alias}.id` +
    ` AND ${ri}.code = ${codeArg} AND ${t}."projectId" = ${ri}."projectId" AND NOT ${t}.deleted${targetScope ? ` AND ${targetScope}` : ''}` +
    ` AND (${perType.join(' OR ')}))`
  );
}

/** The parts of a chain's condition on the resource `alias`: its aliases, placeholders and each target type's condition. */
interface ChainParts {
  alias: string;
  ri: string;
  t: string;
  codeArg: string;
  targetScope: string | undefined;
  perType: string[];
  targetKeys: readonly TargetKey[];
}

/**
 * A chain tested on each of a few resources (CompileContext.perRow): the resource's own reference
 * rows of the code, through the primary key (an Observation has a handful), and each one's target
 * probed by primary key, its conditions by its own index rows; fenced by OFFSET 0 and `IS TRUE` so
 * that no plan can do otherwise. As a plain EXISTS, PostgreSQL without statistics hashed every
 * reference row of the code in the project whose target matched (500,000 for
 * `subject:Patient.gender=female`) for a page of 20. When every target type's condition is index
 * rows that must exist and the caller's criteria narrow none, the target's row is not read: its
 * index rows stand for a live resource of its project (the store keeps them exactly while it is
 * not deleted), and the reference row stands in for it.
 */
function chainProbe({ alias, ri, t, codeArg, targetScope, perType, targetKeys }: ChainParts): string {
  const byRows = targetKeys.every(({ isRows, criteria }) => isRows && criteria === undefined);
  const target = byRows
    ? `(SELECT ${ri}."projectId", ${ri}."targetType" AS "resourceType", ${ri}."targetId" AS id)`
    : `(SELECT * FROM resource ${t} WHERE ${t}."resourceType" = ${ri}."targetType" AND ${t}.id = ${ri}."targetId" LIMIT 1)`;
  const live = byRows ? '' : ` AND ${t}."projectId" = ${ri}."projectId" AND NOT ${t}.deleted`;
  return (
    `EXISTS (SELECT 1 FROM reference_index ${ri} CROSS JOIN LATERAL ${target} ${t}` +
    ` WHERE ${ri}."resourceType" = ${alias}."resourceType" AND ${ri}."resourceId" = ${alias}.id` +
    ` AND (${ri}."projectId" = ${alias}."projectId" AND ${ri}.code = ${codeArg}${live}${targetScope ? ` AND ${targetScope}` : ''}` +
    ` AND (${perType.join(' OR ')})) IS TRUE ORDER BY ${ri}.seq OFFSET 0)`
  );
}

/** A chain's target type: its placeholder, its key's index rows if any, and the caller's criteria of it on the target's alias. */
interface TargetKey {
  typeArg: string;
  /** Its rows, unless the chain is probed per resource (CompileContext.perRow), which reports none. */
  rows: IndexRowsCondition | undefined;
  /** Whether its condition is index rows that must exist. */
  isRows: boolean;
  criteria: string | undefined;
}

/**
 * Reports a chain as index rows of its own when its last parameter is index rows (a key such as
 * `subject:Patient.identifier=x`, or another chain), for a statement that starts from them
 * (pages/key-driven.ts for keys, exact counts): the reference rows of this
 * level whose target is one of the resources the key names, found first, each checked to exist,
 * not deleted, in the project, and readable under the caller's criteria. Started from the
 * referencing resources instead, a plan made without statistics read every Observation of the
 * project and probed the references of each, quadratic in the data. Only within one project (`project`: an argument, or CompileContext.rowsProject for
 * a statement that reads one project at a time) and when every target type's key is index rows.
 */
function reportChainRows(
  ctx: CompileContext,
  ri: string,
  t: string,
  codeArg: string,
  project: string,
  targetKeys: readonly TargetKey[],
): void {
  if (targetKeys.some(({ rows }) => rows === undefined)) return;
  const idsOf = ({ typeArg, rows, criteria }: TargetKey): string => {
    const scope = `${rows!.alias}."projectId" = ${project} AND ${rows!.alias}."resourceType" = ${typeArg}`;
    const readable = criteria ? ` AND (${criteria})` : '';
    const live = `(SELECT NOT ${t}.deleted${readable} FROM resource ${t} WHERE ${t}."resourceType" = ${typeArg} AND ${t}.id = m.id AND ${t}."projectId" = ${project} LIMIT 1)`;
    // A union parameter's target may match under several codes: its references are read once.
    const union = rows!.table !== rows!.indexTable;
    const once = union ? ` AND ${firstMatchingRow(rows!, typeArg, project)}` : '';
    return `(SELECT m.id FROM (${indexRowsSource(rows!, scope, union)}) m WHERE ${live} IS TRUE${once} OFFSET 0)`;
  };
  // Each target's reference rows by one index probe of (project, type, id), fenced by OFFSET 0 so
  // that no plan can scan the project's references and test the target afterwards. The targets
  // are read as the probes ask for them, so a statement that needs only the first rows stops early.
  const probes = targetKeys.map(
    (key) =>
      `SELECT ${ri}p.* FROM ${idsOf(key)} AS ${ri}g(id) CROSS JOIN LATERAL (SELECT * FROM reference_index ${ri}p` +
      ` WHERE ${ri}p."projectId" = ${project} AND ${ri}p."targetType" = ${key.typeArg} AND ${ri}p."targetId" = ${ri}g.id AND ${ri}p.code = ${codeArg} OFFSET 0) ${ri}p`,
  );
  ctx.onRows!({ table: `(${probes.join(' UNION ALL ')})`, indexTable: 'reference_index', codeArg, condition: undefined, alias: ri, depth: ctx.depth });
}

/**
 * Tells a caller that reads no rows (CompileContext.rowsUnread: a chain probed per resource, whose
 * target is this chain) that this chain is index rows, as reportChainRows would, without writing
 * their statement: its placeholders would be sent with a statement that never uses them.
 */
function reportUnreadChainRows(ctx: CompileContext, ri: string, codeArg: string, targetKeys: readonly TargetKey[]): void {
  if (targetKeys.every(({ isRows }) => isRows)) ctx.onRows!({ table: 'reference_index', indexTable: 'reference_index', codeArg, condition: undefined, alias: ri, depth: ctx.depth });
}

/** The parts of `_has:Type:reference:parameter`: the referencing type, its reference parameter, and the rest. */
export function parseHas(name: string, ctx: Pick<CompileContext, 'parameters' | 'mayRead'>): { type: string; code: string; rest: string; param: SearchParameter } {
  const match = /^_has:([A-Za-z]+):([A-Za-z0-9_-]+):(.+)$/.exec(name);
  if (!match || !isResourceType(match[1])) {
    throw errors.invalid(`Invalid _has "${name}": use _has:Type:referenceParameter:parameter`, name);
  }
  const [, type, code, rest] = match;
  if (ctx.mayRead && !ctx.mayRead(type)) throw errors.forbidden(`Your access does not allow ${type} resources, which "${name}" searches`);
  const param = findParameter(code, [type], name, ctx.parameters);
  if (param.type !== 'reference') throw errors.invalid(`In "${name}", ${code} is not a reference parameter of ${type}`, name);
  return { type, code, rest, param };
}

/**
 * `_has:Observation:patient:code=x`: some Observation of the same project whose `patient`
 * references this resource matches. Always a probe per resource (a subplan, fenced by OFFSET 0):
 * the references to it by the (project, type, code, target) index, and each referencing
 * resource's own condition probed through its own index rows (perRow). As a semi-join, a plan
 * made without statistics read every reference row of the code in the project, or every
 * Observation of the code, for a page of 20 Patients, and did not finish in 30 s; a resource has
 * few references to it, so the probe is bounded whatever the statistics. A reference row stands
 * for a live resource of its project (the store keeps index rows exactly while a resource is not
 * deleted, as exact counts rely on), so the referencing resource's row is read only for a
 * condition on `_lastUpdated`, a column only it has (reading it cost a random heap read per
 * reference). A `_has` whose referencing rows are few drives the page instead (pages/has-driven.ts).
 * The caller's criteria of the referencing type are tested on its row too (criteriaOn): the
 * references of resources it may not read tell nothing.
 */
export function compileHas(
  name: string,
  value: string,
  searched: readonly string[],
  alias: string,
  ctx: CompileContext,
  compileParameter: CompileParameter,
): string {
  const { type, code, rest, param } = parseHas(name, ctx);
  checkTargetTypes(name, code, param, searched);
  const inner = nextDepth(ctx, name);
  const ri = `h${inner.depth}`;
  const s = `s${inner.depth}`;
  const condition = compileParameter(rest, value, [type], s, { ...inner, perRow: true });
  // Criteria may test any column of the resource (`_lastUpdated`), so a narrowed type's row is read.
  const criteria = criteriaOn(type, s, inner);
  const tested = criteria ? `(${condition}) AND (${criteria})` : condition;
  const source = criteria || /^_lastUpdated|^_filter$/.test(rest)
    ? `(SELECT * FROM resource ${s} WHERE ${s}."resourceType" = ${ri}."resourceType" AND ${s}.id = ${ri}."resourceId" LIMIT 1)`
    : `(SELECT ${ri}."projectId", ${ri}."resourceType", ${ri}."resourceId" AS id)`;
  return (
    `EXISTS (SELECT 1 FROM reference_index ${ri} CROSS JOIN LATERAL ${source} ${s}` +
    ` WHERE ${ri}."projectId" = ${alias}."projectId" AND ${ri}."resourceType" = ${ctx.args.add(type)} AND ${ri}.code = ${ctx.args.add(code)}` +
    ` AND ${ri}."targetId" = ${alias}.id AND ${ri}."targetType" = ${alias}."resourceType" AND (${tested}) IS TRUE OFFSET 0)`
  );
}
