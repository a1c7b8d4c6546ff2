import { everyProject } from './pages/every-project.js';
import { filterCondition, namedProjects, type Filter } from './plan/filters.js';
import type { SearchQuery } from './plan/query.js';
import { typeCriteria } from '../identity/policy.js';
import { resolveParameter } from './query/conditions.js';
import { selectsByKey } from './query/conditions/keys.js';
import type { CompileContext, IndexRowsCondition } from './query/conditions/types.js';
import { dateBoundKind } from './query/conditions/date.js';
import { indexRowsOfAll, indexRowsSource } from './query/conditions/shared.js';
import { scopeSql, type Scope } from '../storage/project-scope.js';
import { SqlArgs } from '../db/sql-args.js';
import { storesOneRowAtMost } from '../indexing/single-row.js';
import { codeRowsInProject, isTokenCodeFilter } from './pages/token-code.js';
import { missingTrueFilter, resourcesWithRows, type MissingFilter } from './pages/missing-rows.js';

/** Above this many projects, a super admin's count names them in one condition instead of counting each apart. */
const MAX_PROJECTS_COUNTED_APART = 20;
/**
 * How far the rows of each of several token codes are counted to choose the one that drives a
 * count (countDriver): as far as the count reads, since a driver's every row is probed for
 * the other parameters, and counting a code's rows costs a fraction of probing them.
 */
const DRIVER_ROWS_COUNTED = 100_000;
/**
 * Token codes each with fewer rows than this times the fewest's are read together
 * (indexRowsOfAll): probing a row for another code cost 4-8 times what reading and grouping a row
 * did (analyzed / never analyzed), so reading every code's rows wins while the others have at
 * most about 3 times the driver's.
 */
const COMMON_CODES_RATIO = 3;

/**
 * The statement of an exact count from the index tables (indexCountQuery), or undefined to count
 * through the resource table. A super admin's search spans every project, and the index tables
 * are keyed by project first: the count is then the sum of one count per project, each with the
 * projectId that lets the planner use those keys (and carry it from one table to the next).
 */
export async function exactCountQuery(query: SearchQuery): Promise<{ sql: string; args: unknown[] } | undefined> {
  const { services, typeList, scope, filters } = query;
  if (typeList?.length !== 1) return undefined;
  const type = typeList[0];
  const criteria = criteriaFilters(query, type);
  if (!criteria) return undefined;
  if (filters.some(({ name }) => name.split(/[:.]/)[0] === '_lastUpdated')) return undefined;
  const args = new SqlArgs();
  if (scope.projectIds !== undefined || filters.length + criteria.length === 0) {
    const sql = indexCountQuery(query, type, scope, args, criteria, await countDriver(query, type, scope));
    return sql ? { sql, args: args.values } : undefined;
  }
  // The projects `_project` names are all a count can find (its condition still stands on each).
  const projects = namedProjects(filters) ?? (await services.db.query<{ id: string }>(`SELECT unnest(${everyProject('resource')}) AS id`)).map(({ id }) => id);
  if (projects.length > MAX_PROJECTS_COUNTED_APART) {
    const sql = indexCountQuery(query, type, scope, args, criteria);
    return sql ? { sql, args: args.values } : undefined;
  }
  const counts: string[] = [];
  for (const id of projects) {
    const one: Scope = { projectIds: [id] };
    const sql = indexCountQuery(query, type, one, args, criteria, await countDriver(query, type, one));
    if (!sql) return undefined;
    counts.push(`(${sql})`);
  }
  return { sql: `SELECT (${counts.length > 0 ? counts.join(' + ') : '0'})::int AS n`, args: args.values };
}

/**
 * How the token codes of one project's count are read: the code with the fewest index rows
 * (counted up to DRIVER_ROWS_COUNTED, no statistics) drives and each of its rows is probed for the
 * others, as `status=final&code=..` reads the code's rows and probes each for `final` instead of
 * probing every final Observation (a million) for the code. A filter whose code stores one row per
 * resource comes first, so that on a tie it drives and its rows are counted as they are, without
 * de-duplication. When the codes are alike in size (all at the bound, or each below
 * COMMON_CODES_RATIO times the fewest), `together` holds them all: their rows are read once and
 * grouped by resource (indexRowsOfAll). Undefined when fewer than two such filters or the count
 * spans several projects: indexCountQuery's own choice.
 */
async function countDriver({ services, filters, ctx }: SearchQuery, type: string, scope: Scope): Promise<CountDriver | undefined> {
  const projectId = scope.projectIds?.length === 1 ? scope.projectIds[0] : undefined;
  const codes = filters.filter(isTokenCodeFilter);
  const keyed = filters.some(({ name, value, resolved }) => selectsByKey(name, value, resolved));
  if (projectId === undefined || codes.length < 2 || keyed) return undefined;
  const ordered = [...codes.filter((code) => oneRowPerResource(code, type)), ...codes.filter((code) => !oneRowPerResource(code, type))];
  const counts: number[] = [];
  for (const code of ordered) {
    // A later code only as far as decides: at COMMON_CODES_RATIO times the fewest so far, it neither drives nor is alike.
    const fewest = counts.length > 0 ? Math.min(...counts) : DRIVER_ROWS_COUNTED;
    const bound = fewest === DRIVER_ROWS_COUNTED ? fewest : Math.min(DRIVER_ROWS_COUNTED, fewest * COMMON_CODES_RATIO);
    counts.push(await codeRowsInProject({ services, type, projectId, ctx }, code, bound));
  }
  const fewest = Math.min(...counts);
  const alike = counts.every((n) => n === DRIVER_ROWS_COUNTED) || counts.every((n) => n < DRIVER_ROWS_COUNTED && n < fewest * COMMON_CODES_RATIO);
  return { filter: ordered[counts.indexOf(fewest)], together: alike && fewest > 0 ? ordered : undefined };
}

/** The token code that drives a count (countDriver), and all of them when they are read together. */
interface CountDriver {
  filter: Filter;
  together?: readonly Filter[];
}

/**
 * The caller's AccessPolicy criteria for `type` as filters of the count (they are search
 * parameters of the type, tested on the index rows as the search's own), or undefined when they
 * cannot be: SMART scopes' alternatives (anyOf) are counted through the resource table.
 */
function criteriaFilters({ services }: SearchQuery, type: string): Filter[] | undefined {
  const criteria = typeCriteria(services.identity, type);
  if (!criteria) return [];
  if (criteria.anyOf) return undefined;
  return criteria.all.map(([name, value]) => ({ name, value, resolved: resolveParameter(name, [type], services.parameters) }));
}

/**
 * An exact count of one type in `scope` that reads the index tables instead of the resource
 * table (exactCountQuery checks that the search allows it), or undefined. Counting through
 * `resource` visits one heap row per match; index rows alone answer in index-only scans. It rests
 * on an invariant of the store (src/storage/sql.ts, repository.ts): a resource has index rows
 * exactly while its current version is not deleted, and they carry its project and type, so a
 * matching index row stands for a live resource.
 *  - No filter: every row of the type minus the deleted ones (index `resource_deleted_idx`).
 *  - Only `p=ge..&p=le..` on a date parameter: matching rows counted without de-duplication
 *    (`countDateRange`).
 *  - Otherwise: the distinct resources of one parameter's matching rows (a key among the search's
 *    parameters or the AccessPolicy's `criteria`, else `drive`: the token code with the fewest rows
 *    of one project's count, countDriver; else a token or reference one of the search when
 *    there is one: its index yields rows in resource order), the other parameters and criteria
 *    probed per driving row through that resource's own index rows (CompileContext.perRow): as a
 *    semi-join, a planner without statistics read every row of a value without a system (all
 *    400,000 `status=final` rows) once per driving row. A driver with one row per resource at
 *    most (`status`, `subject`: indexing/single-row.ts) counts its rows as they are. The criteria
 *    are broad values (a policy's `status=final`) unless they name a key: they drive only when
 *    the search has no parameter of its own.
 *  - Token codes alike in size (`drive.together`, countDriver), without a key: their rows read
 *    once and grouped by resource (indexRowsOfAll), the other parameters probed per resource. Two
 *    codes every resource has (`status=final&category=vital-signs`, a million rows each) had one
 *    probed per row of the other (7.6 s of database CPU never analyzed, 3.8 s analyzed), and a
 *    join of them, which a planner without statistics made a nested loop, ran for 17 minutes.
 */
function indexCountQuery(
  { services, filters: own, valueSets, ctx: { mayRead, criteriaOf } }: SearchQuery,
  type: string,
  scope: Scope,
  args: SqlArgs,
  criteria: readonly Filter[],
  drive?: CountDriver,
): string | undefined {
  const filters = [...own, ...criteria];
  const typeArg = args.add(type);
  const inScope = (alias: string, table: string): string => {
    const scoped = scopeSql(alias, 'projectId', scope, args) ?? `${alias}."projectId" = ANY(${everyProject(table)})`;
    return `${alias}."resourceType" = ${typeArg} AND ${scoped}`;
  };
  if (filters.length === 0) return resourcesCount(typeArg, scope, args);
  const ctx: CompileContext = { args, scope, fhirBase: services.config.fhirBaseUrl, depth: 0, valueSets, parameters: services.parameters };
  const missing = loneMissing(filters, type);
  if (missing) {
    // The resources less those with a row of the code: no resource probed for its rows.
    const named = (alias: string): string => missing.projects.map((filter) => ` AND ${filterCondition(filter, [type], alias, ctx)}`).join('');
    const having = resourcesWithRows(missing.rows, `${inScope('w', missing.rows.table)}${named('w')}`, args);
    return resourcesCount(typeArg, scope, args, named('r'), having);
  }
  const compiled = filters.map((filter, i) => {
    let rows: IndexRowsCondition | undefined;
    const ofCriteria = i >= own.length;
    const onRows = (found: IndexRowsCondition) => {
      if (found.depth === 0) rows = found;
    };
    // The caller's own filters look only into what it may read; the policy's criteria into anything (as in base-conditions).
    const reads = ofCriteria ? {} : { mayRead, criteriaOf };
    const sql = filterCondition(filter, [type], 'r', { ...ctx, onRows, perRow: true, ...reads });
    const key = selectsByKey(filter.name, filter.value, filter.resolved);
    return { filter, sql, rows: sql.startsWith('EXISTS (') ? rows : undefined, key, ofCriteria, oneRow: oneRowPerResource(filter, type) };
  });
  const dateRange = countDateRange(own, compiled.slice(0, own.length), inScope, compiled.slice(own.length).map((c) => c.sql));
  if (dateRange) return dateRange;
  const where = (others: readonly { sql: string }[]): string => (others.length > 0 ? ` WHERE ${others.map((c) => c.sql).join(' AND ')}` : '');
  const keyed = compiled.some((c) => c.rows && c.key);
  const together = !keyed && drive?.together ? compiled.filter((c) => drive.together!.includes(c.filter)) : undefined;
  const rowsOfAll = together?.every((c) => c.rows) && indexRowsOfAll(together.map((c) => c.rows!), inScope(together[0].rows!.alias, together[0].rows!.table));
  if (together && rowsOfAll) {
    // Each resource once already; OFFSET 0 keeps the outer conditions out of the grouped read (drivingRows).
    return `SELECT count(*)::int AS n FROM (${rowsOfAll} OFFSET 0) r${where(compiled.filter((c) => !together.includes(c)))}`;
  }
  const searched = compiled.filter((c) => !c.ofCriteria);
  const driver =
    compiled.find((c) => c.rows && c.key) ??
    compiled.find((c) => c.rows && c.filter === drive?.filter) ??
    searched.find((c) => c.rows && (c.rows.indexTable === 'token_index' || c.rows.indexTable === 'reference_index')) ??
    searched.find((c) => c.rows) ??
    compiled.find((c) => c.rows);
  if (!driver?.rows) return undefined;
  const matching = drivingRows(driver.rows, inScope(driver.rows.alias, driver.rows.table));
  // count(DISTINCT) always de-duplicates by sorting; `SELECT DISTINCT` lets the planner hash, and
  // with statistics it hashed a million matches, spilling to disk, where the sort took half as long.
  const counted = driver.oneRow ? 'count(*)' : 'count(DISTINCT r.id)';
  return `SELECT ${counted}::int AS n FROM (${matching}) r${where(compiled.filter((c) => c !== driver))}`;
}

/**
 * The count of the resources of the type (`typeArg`) in `scope` that are not deleted, that meet
 * `named` (conditions on `r`) and, given `less` (a count statement), less that count. The primary
 * key (resourceType, id) serves every project at once.
 */
function resourcesCount(typeArg: string, scope: Scope, args: SqlArgs, named = '', less?: string): string {
  const scoped = scopeSql('r', 'projectId', scope, args);
  const rows = `FROM resource r WHERE r."resourceType" = ${typeArg}${scoped ? ` AND ${scoped}` : ''}${named}`;
  return `SELECT ((SELECT count(*) ${rows}) - (SELECT count(*) ${rows} AND r.deleted)${less ? ` - (${less})` : ''})::int AS n`;
}

/** A search of one `:missing=true` filter (missingTrueFilter) and `_project` alone, with the `_project` filters. */
function loneMissing(filters: readonly Filter[], type: string): { rows: MissingFilter; projects: Filter[] } | undefined {
  const projects = filters.filter(({ resolved }) => resolved.kind === 'project');
  const rows = projects.length === filters.length - 1 ? missingTrueFilter(filters, type) : undefined;
  return rows && { rows, projects };
}

/**
 * The driver's rows (indexRowsSource) as a count reads them, whatever the statistics say:
 *  - A token code's rows in the order of the value index (system, then resource): analyzed, the
 *    planner counted `status=final` (a million of four million rows) by a parallel sequential scan
 *    of the whole table, three processes' CPU; an index-only scan in order is the cheaper plan
 *    either way, and a sort of the rows costs more than either, so that no plan takes it.
 *  - OFFSET 0 keeps the conditions of the outer statement (`_project`, the other parameters) out
 *    of the driver's scan: `r."projectId" IN (..)` pushed into a date's GiST scan was served by a
 *    second index on the project (all its date rows, 1,100,000) and the bitmaps ANDed.
 */
function drivingRows(rows: IndexRowsCondition, scope: string): string {
  const ordered = rows.table === 'token_index' ? ` ORDER BY ${rows.alias}.system, ${rows.alias}."resourceId"` : '';
  return `${indexRowsSource(rows, scope)}${ordered} OFFSET 0`;
}

/** Whether `filter`'s rows are at most one per resource (indexing/single-row.ts): its matching rows are then its matches. */
function oneRowPerResource({ resolved }: Filter, type: string): boolean {
  return resolved.kind === 'indexed' && resolved.codes.length === 1 && storesOneRowAtMost(type, resolved.codes[0]);
}

/**
 * The count of a search holding `p=ge<A>&p=le<B>` (gt, lt alike) on a date parameter, such as a
 * measure's period. Resources with at most one row of `p` match when that row meets both bounds;
 * the others have a row with seq > 1 (query/conditions/date-range.ts) and match when some
 * row meets each bound. So the count is: rows meeting both bounds, minus those of resources with
 * a row with seq > 1, plus the resources with a row with seq > 1 that match; the search's other
 * parameters are conditions on each. The first term is an index-only range scan that needs no
 * de-duplication (one row per resource); the others read only rows with seq > 1.
 */
function countDateRange(
  filters: readonly Filter[],
  compiled: { sql: string; rows?: IndexRowsCondition }[],
  inScope: (alias: string, table: string) => string,
  criteria: readonly string[],
): string | undefined {
  const bound = (kind: 'lower' | 'upper', name?: string): number =>
    filters.findIndex((f, i) => (name === undefined || f.name === name) && dateBoundKind(f.value) === kind && compiled[i].rows?.indexTable === 'date_index');
  const low = bound('lower');
  if (low < 0) return undefined;
  const high = bound('upper', filters[low].name);
  if (high < 0) return undefined;
  const first = compiled[low].rows!;
  const second = compiled[high].rows!;
  if (!first.condition || !second.condition) return undefined;
  const others = [...compiled.filter((_, i) => i !== low && i !== high).map((c) => c.sql), ...criteria];
  const where = others.length > 0 ? ` WHERE ${others.join(' AND ')}` : '';
  const x = first.alias;
  const code = first.codeArg;
  const both = `${x}.code = ${code} AND ${x}.code = ${second.codeArg} AND (${first.condition}) AND (${second.condition})`;
  const later = (alias: string): string => `${alias}.code = ${code} AND ${alias}.seq > 1`;
  const sameResource = (alias: string, of: string): string =>
    `${alias}."resourceType" = ${of}."resourceType" AND ${alias}."resourceId" = ${of}."resourceId"`;
  const rowMeets = (condition: string): string =>
    `EXISTS (SELECT 1 FROM date_index ${x} WHERE ${sameResource(x, 'g')} AND ${x}.code = ${code} AND (${condition}))`;
  const resources = (alias: string, condition: string): string =>
    `(SELECT ${alias}."projectId", ${alias}."resourceType", ${alias}."resourceId" AS id FROM date_index ${alias} WHERE ${inScope(alias, 'date_index')} AND ${condition}) r`;
  const rows = `SELECT count(*) FROM ${resources(x, both)}${where}`;
  const ofLaterRows = `SELECT count(*) FROM ${resources(x, `${both} AND EXISTS (SELECT 1 FROM date_index g WHERE ${sameResource('g', x)} AND ${later('g')})`)}${where}`;
  const laterMatching =
    `SELECT count(*) FROM (SELECT DISTINCT r.id FROM ${resources('g', `${later('g')} AND ${rowMeets(first.condition)} AND ${rowMeets(second.condition)}`)}${where}) m`;
  return `SELECT ((${rows}) - (${ofLaterRows}) + (${laterMatching}))::int AS n`;
}
