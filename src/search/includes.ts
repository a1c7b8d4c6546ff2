import type { SqlExecutor } from '../db/database.js';
import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { COLUMNS, queryRows } from './pages/rows.js';
import { policyCondition } from './plan/base-conditions.js';
import type { SearchQuery } from './plan/query.js';
import { expandValueSets } from './plan/value-set-discovery.js';
import type { ProjectParameters } from '../indexing/parameters.js';
import { policyAllowsType, readsEveryType } from '../identity/policy.js';
import { findParameter } from './query/conditions/lookup.js';
import { scopeSql, type Scope } from '../storage/project-scope.js';
import { SqlArgs } from '../db/sql-args.js';
import type { SearchRow } from './result.js';

/** `_include` and `_revinclude` (with `:iterate`): the resources the matches reference, or that reference them. */

/** Rounds of `:iterate` includes, and included resources per search, at most. */
const MAX_INCLUDE_ROUNDS = 4;
const MAX_INCLUDED = 5000;

/** The resources the search's `_include`s and `_revinclude`s add to `matches`, within the caller's AccessPolicy. */
export async function includedResources(query: SearchQuery, matches: SearchRow[]): Promise<SearchRow[]> {
  return restrictToPolicy(query, await includes(query, matches));
}

interface IncludeSpec {
  reverse: boolean;
  iterate: boolean;
  sourceType: string;
  code: string;
  targetType?: string;
}

function parseIncludes(params: readonly [string, string][], parameters: ProjectParameters | undefined): IncludeSpec[] {
  const specs: IncludeSpec[] = [];
  for (const [name, value] of params) {
    const base = name.split(':')[0];
    if (base !== '_include' && base !== '_revinclude') continue;
    const modifier = name.split(':')[1];
    if (modifier !== undefined && modifier !== 'iterate') throw errors.invalid(`Unknown modifier in ${name}`, name);
    const [sourceType, code, targetType, extra] = value.split(':');
    if (!sourceType || !code || extra !== undefined || !isResourceType(sourceType) || (targetType && !isResourceType(targetType))) {
      throw errors.invalid(`Invalid ${name} "${value}": use SourceType:parameter[:TargetType]`, name);
    }
    const param = findParameter(code, [sourceType], name, parameters);
    if (param.type !== 'reference') throw errors.invalid(`${name}: ${sourceType}:${code} is not a reference parameter`, name);
    specs.push({ reverse: base === '_revinclude', iterate: modifier === 'iterate', sourceType, code, targetType });
  }
  return specs;
}

async function includes({ services, scope, params, leniency }: SearchQuery, matches: SearchRow[]): Promise<SearchRow[]> {
  const specs = leniency.tolerate(() => parseIncludes(params, services.parameters)) ?? [];
  if (specs.length === 0 || matches.length === 0) return [];
  const seen = new Set(matches.map((row) => `${row.resourceType}/${row.id}`));
  const included: SearchRow[] = [];
  let frontier = matches;
  for (let round = 0; round < MAX_INCLUDE_ROUNDS && frontier.length > 0; round++) {
    const added: SearchRow[] = [];
    for (const spec of specs) {
      if (round > 0 && !spec.iterate) continue;
      for (const row of await includeRows(services.db, scope, spec, frontier)) {
        const key = `${row.resourceType}/${row.id}`;
        if (seen.has(key) || included.length + added.length >= MAX_INCLUDED) continue;
        seen.add(key);
        added.push(row);
      }
    }
    included.push(...added);
    frontier = added;
  }
  return included;
}

async function includeRows(db: SqlExecutor, scope: Scope, spec: IncludeSpec, sources: SearchRow[]): Promise<SearchRow[]> {
  const args = new SqlArgs();
  if (!spec.reverse) {
    const ids = sources.filter((row) => row.resourceType === spec.sourceType).map((row) => row.id);
    if (ids.length === 0) return [];
    const conditions = [
      `i."resourceType" = ${args.add(spec.sourceType)}`,
      `i."resourceId" = ANY(ARRAY(SELECT json_array_elements_text(${args.add(JSON.stringify(ids))}::json)))`,
      `i.code = ${args.add(spec.code)}`,
      'NOT r.deleted',
    ];
    if (spec.targetType) conditions.push(`i."targetType" = ${args.add(spec.targetType)}`);
    const scoped = scopeSql('r', 'projectId', scope, args);
    if (scoped) conditions.push(scoped);
    return queryRows(
      db,
      `SELECT ${COLUMNS} FROM reference_index i JOIN resource r ON r."resourceType" = i."targetType" AND r.id = i."targetId"
       WHERE ${conditions.join(' AND ')}`,
      args.values,
    );
  }
  const targets = spec.targetType ? sources.filter((row) => row.resourceType === spec.targetType) : sources;
  if (targets.length === 0) return [];
  const byType = new Map<string, string[]>();
  for (const row of targets) byType.set(row.resourceType, [...(byType.get(row.resourceType) ?? []), row.id]);
  const alternatives = [...byType].map(
    ([type, ids]) =>
      `(i."targetType" = ${args.add(type)} AND i."targetId" = ANY(ARRAY(SELECT json_array_elements_text(${args.add(JSON.stringify(ids))}::json))))`,
  );
  const conditions = [`i."resourceType" = ${args.add(spec.sourceType)}`, `i.code = ${args.add(spec.code)}`, `(${alternatives.join(' OR ')})`, 'NOT r.deleted'];
  const scopedIndex = scopeSql('i', 'projectId', scope, args);
  if (scopedIndex) conditions.push(scopedIndex);
  return queryRows(
    db,
    `SELECT ${COLUMNS} FROM reference_index i JOIN resource r ON r."resourceType" = i."resourceType" AND r.id = i."resourceId"
     WHERE ${conditions.join(' AND ')} LIMIT ${MAX_INCLUDED + 1}`,
    args.values,
  );
}

/**
 * Included resources pass the same AccessPolicy and SMART scopes as matches: types they do not
 * allow are dropped, and a type with criteria keeps only the resources that meet them.
 */
async function restrictToPolicy({ services, scope, valueSets: known }: SearchQuery, rows: SearchRow[]): Promise<SearchRow[]> {
  const identity = services.identity;
  if (readsEveryType(identity) || rows.length === 0) return rows;
  const allowed = rows.filter((row) => policyAllowsType(identity, row.resourceType));
  const kept = new Set<string>();
  // Included types can have criteria with `:in` that the search's own types did not need.
  const more = await expandValueSets(services, scope, [...new Set(allowed.map((row) => row.resourceType))], undefined, known);
  const valueSets = more ? new Map([...(known ?? []), ...more]) : known;
  for (const type of new Set(allowed.map((row) => row.resourceType))) {
    const ids = allowed.filter((row) => row.resourceType === type).map((row) => row.id);
    const args = new SqlArgs();
    const condition = policyCondition(identity, type, {
      args,
      scope,
      fhirBase: services.config.fhirBaseUrl,
      depth: 0,
      valueSets,
      parameters: services.parameters,
    }, 'probe');
    if (!condition) {
      for (const id of ids) kept.add(`${type}/${id}`);
      continue;
    }
    const matching = await services.db.query<{ id: string }>(
      `SELECT r.id FROM resource r WHERE r."resourceType" = ${args.add(type)}
       AND r.id = ANY(ARRAY(SELECT json_array_elements_text(${args.add(JSON.stringify(ids))}::json))) AND ${condition}`,
      args.values,
    );
    for (const row of matching) kept.add(`${type}/${row.id}`);
  }
  return allowed.filter((row) => kept.has(`${row.resourceType}/${row.id}`));
}
