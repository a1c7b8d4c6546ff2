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
import { everyProject } from './pages/every-project.js';
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

function includeRows(db: SqlExecutor, scope: Scope, spec: IncludeSpec, sources: SearchRow[]): Promise<SearchRow[]> {
  return spec.reverse ? referencingRows(db, scope, spec, sources) : referencedRows(db, scope, spec, sources);
}

/**
 * The resources that `sources` of the spec's type reference by its code: each source's reference
 * rows by primary key, and each target by primary key. The probes are fenced (OFFSET 0, LIMIT 1)
 * so that a plan made without statistics cannot read every reference row of the code and test the
 * sources afterwards.
 */
async function referencedRows(db: SqlExecutor, scope: Scope, spec: IncludeSpec, sources: SearchRow[]): Promise<SearchRow[]> {
  const ids = sources.filter((row) => row.resourceType === spec.sourceType).map((row) => row.id);
  if (ids.length === 0) return [];
  const args = new SqlArgs();
  const source = args.add(JSON.stringify(ids));
  const targetType = spec.targetType ? ` AND i."targetType" = ${args.add(spec.targetType)}` : '';
  const references =
    `SELECT i."targetType", i."targetId" FROM reference_index i WHERE i."resourceType" = ${args.add(spec.sourceType)}` +
    ` AND i."resourceId" = s.id AND i.code = ${args.add(spec.code)}${targetType} OFFSET 0`;
  const scoped = scopeSql('r', 'projectId', scope, args);
  return queryRows(
    db,
    `SELECT ${COLUMNS} FROM json_array_elements_text(${source}::json) AS s(id) CROSS JOIN LATERAL (${references}) i` +
      ` CROSS JOIN LATERAL (SELECT * FROM resource r WHERE r."resourceType" = i."targetType" AND r.id = i."targetId" LIMIT 1) r` +
      ` WHERE NOT r.deleted${scoped ? ` AND ${scoped}` : ''}`,
    args.values,
  );
}

/**
 * The resources of the spec's type that reference `targets` by its code: one probe of the
 * (project, type, code, target) index per target and project in reach, each referencing resource
 * then by primary key. Fenced as referencedRows: without statistics PostgreSQL took the target
 * list for a filter on every reference row of the code in the project (a million for
 * `_revinclude=Observation:subject`).
 */
async function referencingRows(db: SqlExecutor, scope: Scope, spec: IncludeSpec, sources: SearchRow[]): Promise<SearchRow[]> {
  const targets = spec.targetType ? sources.filter((row) => row.resourceType === spec.targetType) : sources;
  if (targets.length === 0 || scope.projectIds?.length === 0) return [];
  const args = new SqlArgs();
  const keys = args.add(JSON.stringify(targets.map((row) => ({ type: row.resourceType, id: row.id }))));
  const projects = scope.projectIds === undefined ? everyProject('reference_index') : `ARRAY(SELECT json_array_elements_text(${args.add(JSON.stringify(scope.projectIds))}::json))`;
  const sourceType = args.add(spec.sourceType);
  const references =
    `SELECT i."resourceId" FROM reference_index i WHERE i."projectId" = p.id AND i."resourceType" = ${sourceType}` +
    ` AND i.code = ${args.add(spec.code)} AND i."targetId" = t.id AND i."targetType" = t.type OFFSET 0`;
  return queryRows(
    db,
    `SELECT ${COLUMNS} FROM unnest(${projects}) p(id) CROSS JOIN json_to_recordset(${keys}::json) AS t(type text, id text)` +
      ` CROSS JOIN LATERAL (${references}) i` +
      ` CROSS JOIN LATERAL (SELECT * FROM resource r WHERE r."resourceType" = ${sourceType} AND r.id = i."resourceId" LIMIT 1) r` +
      ` WHERE NOT r.deleted LIMIT ${MAX_INCLUDED + 1}`,
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
