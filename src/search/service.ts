import type { Identity } from '../context.js';
import { toInstant, type SqlExecutor } from '../db/database.js';
import { getResourceTypes, isResourceType, type SearchParameter } from '../fhir/definitions.js';
import { errors, issue, OperationOutcomeError, outcome } from '../fhir/outcome.js';
import { parseSummary, type SummaryMode } from '../fhir/summary.js';
import type { OperationOutcomeIssue } from '../fhir/types.js';
import { policyAllowsType, policyCriteria } from './policy.js';
import { compileParameter, type CompileContext, type IndexRowsCondition, type ValueSetMember } from './query/conditions.js';
import { dateBoundKind, dateSortMatches } from './query/conditions/date.js';
import { dateRangeCondition, dateRangeRows } from './query/conditions/date-range.js';
import { selectsByKey } from './query/conditions/keys.js';
import { findParameter, isSearchable } from './query/conditions/lookup.js';
import { numericRangeMatches, numericRangesExist, numericRangeTable } from './query/conditions/number-quantity.js';
import { stringPrefixMatches, stringPrefixRange, stringSortMatches } from './query/conditions/string.js';
import { isTokenCodeMatch, tokenCodeMatches, tokenCodeRowCount } from './query/conditions/token.js';
import { decodeCursor, encodeCursor, searchSignature, type CursorPosition } from './query/cursor.js';
import { splitOr, unescape } from './query/values.js';
import { scopeSql, SqlArgs, type Scope } from './query/sql-builder.js';
import { parametersForSearch, type ProjectParameters } from './parameters.js';
import { expandForSearch } from './value-sets.js';
import { statementKey, type SearchCache, type WriteDependency } from './search-cache.js';
import type { SearchServices } from './search-services.js';

export { searchServicesFor, type SearchContext, type SearchServices, type SearchServicesOptions } from './search-services.js';

/**
 * The search service (http://hl7.org/fhir/R4/search.html, SPEC 4.8 and 8), transport-free: REST
 * and GraphQL hand it parsed parameters and get matches, includes, a total and paging positions.
 */

export const DEFAULT_COUNT = 20;
export const MAX_COUNT = 1000;
export const MAX_OFFSET = 10_000;
export const MIN_CURSOR_COUNT = 20;
/** Rounds of `:iterate` includes, and included resources per search, at most. */
const MAX_INCLUDE_ROUNDS = 4;
const MAX_INCLUDED = 5000;

export interface SearchOptions {
  /** `Prefer: handling=lenient`: unknown parameters and bad values are ignored and reported. */
  lenient?: boolean;
  /**
   * Matches without their JSON (`text` is ''): for callers that hold most of the versions already
   * (GraphQL on the embedded database, whose resource cache does), since sending a page of
   * resources is most of the embedded database's cost of a search. Included resources keep theirs.
   */
  withoutContent?: boolean;
}

/** A stored resource as the search returns it: the JSON text exactly as stored. */
export interface SearchRow {
  resourceType: string;
  id: string;
  projectId: string;
  versionId: string;
  lastUpdated: string;
  text: string;
}

export interface SearchTotal {
  value: number;
  /** True for a count, false for the planner's estimate. */
  exact: boolean;
}

export interface SearchResult {
  matches: SearchRow[];
  includes: SearchRow[];
  total?: SearchTotal;
  /** Problems ignored under lenient handling (reported in the Bundle as an outcome entry). */
  warnings: OperationOutcomeIssue[];
  summary: SummaryMode | undefined;
  elements: string | undefined;
  paging: Paging;
}

export interface Paging {
  count: number;
  /** Cursor paging: the search is sorted by _lastUpdated ascending and _count >= 20. */
  cursorMode: boolean;
  offset: number;
  /** The cursor of this page, when the request had one. */
  cursor?: string;
  next?: { offset: number } | { cursor: string };
  previous?: { offset: number } | { cursor: string };
  /** The parameters of the search, as the links must repeat them (paging parameters removed). */
  params: [string, string][];
}

interface SortKey {
  code: string;
  descending: boolean;
}

/** Result-control parameters (not filters). */
const CONTROL = new Set([
  '_count',
  '_offset',
  '_sort',
  '_total',
  '_cursor',
  '_summary',
  '_elements',
  '_include',
  '_revinclude',
  '_include:iterate',
  '_revinclude:iterate',
  '_format',
  '_pretty',
  '_type',
]);

/**
 * Runs a search over `types` (one type for a type search; several, or undefined for every type,
 * for a system search) in the caller's scope: their project, or every project for a super admin,
 * narrowed by `_project`.
 */
export async function search(
  services: SearchServices,
  types: string | readonly string[] | undefined,
  params: readonly [string, string][],
  options: SearchOptions = {},
): Promise<SearchResult> {
  const warnings: OperationOutcomeIssue[] = [];
  const lenient = options.lenient ?? false;
  const tolerate = <T>(work: () => T): T | undefined => {
    try {
      return work();
    } catch (error) {
      // A parameter that is understood but too costly is refused even under lenient handling:
      // ignoring it would widen the search.
      const tooCostly = error instanceof OperationOutcomeError && error.outcome.issue.some((i) => i.code === 'too-costly');
      if (lenient && error instanceof OperationOutcomeError && error.status === 400 && !tooCostly) {
        warnings.push(...error.outcome.issue.map((i) => ({ ...i, severity: 'warning' as const })));
        return undefined;
      }
      throw error;
    }
  };

  const typeList = typeof types === 'string' ? [types] : types ? [...types] : undefined;
  for (const type of typeList ?? []) {
    if (!isResourceType(type)) throw errors.notSupported(`Unknown resource type "${type}"`);
  }
  const paramTypes = typeList ?? ['Resource'];
  const get = (name: string): string | undefined => params.find(([key]) => key === name)?.[1];
  services = { ...services, parameters: services.parameters ?? (await parametersForSearch(services.db, services.identity, params)) };
  const parameters = services.parameters;

  // Result control --------------------------------------------------------------------------------
  const count = parseCount(get('_count'));
  const offset = parseOffset(get('_offset'));
  const totalMode = parseTotal(get('_total'));
  const summary = parseSummary(get('_summary') ?? null);
  const elements = get('_elements');
  const sort = tolerate(() => parseSort(get('_sort'), paramTypes, parameters)) ?? [];
  const cursorText = get('_cursor');

  // Filters ---------------------------------------------------------------------------------------
  const args = new SqlArgs();
  const scope = scopeOf(services.identity);
  const valueSets = await expandValueSets(services, scope, typeList, paramTypes, params);
  const ctx: CompileContext = { args, scope, fhirBase: services.config.fhirBaseUrl, depth: 0, valueSets, parameters };
  const where = baseConditions(services.identity, typeList, scope, ctx);
  const filterParams: [string, string][] = [];
  const ignored = new Set<number>();
  for (const [index, [name, value]] of params.entries()) {
    if (CONTROL.has(name)) continue;
    const mark = args.values.length;
    const condition = tolerate(() => compileParameter(name, value, paramTypes, 'r', ctx));
    // A parameter that failed (lenient) must leave no arguments behind.
    if (condition === undefined) {
      args.values.length = mark;
      ignored.add(index);
    } else {
      where.push(condition);
      filterParams.push([name, value]);
    }
  }
  where.push(...dateRangeConditions(filterParams, paramTypes, ctx));
  const planOnce = filterParams.some(([name, value]) => selectsByKey(name, value, paramTypes, parameters));

  // Paging mode -----------------------------------------------------------------------------------
  const cursorMode = sort.length === 1 && sort[0].code === '_lastUpdated' && !sort[0].descending && count >= MIN_CURSOR_COUNT;
  // Only cursors use it (a hash per search showed in profiles of searches without one).
  const signature = (): string => searchSignature(typeList, [...filterParams, ['_sort', get('_sort') ?? '']]);
  let position: CursorPosition | undefined;
  if (cursorText !== undefined) {
    if (!cursorMode) {
      throw errors.invalid(
        `_cursor needs a search sorted by _lastUpdated ascending (_sort=_lastUpdated) with _count of at least ${MIN_CURSOR_COUNT}`,
        '_cursor',
      );
    }
    if (get('_offset') !== undefined) throw errors.invalid('Use either _cursor or _offset, not both', '_cursor');
    position = decodeCursor(services.config.fhirBaseUrl, cursorText, signature());
  }
  const linkParams = params.filter(
    ([name], index) => name !== '_cursor' && name !== '_offset' && name !== '_count' && !ignored.has(index),
  );

  const result: SearchResult = {
    matches: [],
    includes: [],
    warnings,
    summary,
    elements,
    paging: { count, cursorMode, offset, cursor: cursorText, params: linkParams },
  };

  const whereSql = where.join(' AND ');
  const multiType = typeList === undefined || typeList.length > 1;
  // Only where an answer may be kept: a page (embedded database) or an exact total.
  const keepsAnswers = services.searchCache !== undefined && (services.searchCache.keepsPages || summary === 'count' || totalMode === 'accurate');
  const dependency = keepsAnswers ? writeDependency(services.identity, scope, typeList, filterParams) : undefined;

  if (summary !== 'count' && count > 0) {
    const columns = options.withoutContent ? KEY_COLUMNS : COLUMNS;
    const kept = services.searchCache?.keepsPages && dependency ? { cache: services.searchCache, dependency } : undefined;
    const project = searchedProject(scope, filterParams);
    const oneProject: DrivenSearch | undefined =
      typeList?.length === 1 && project !== undefined ? { services, type: typeList[0], scope, projectId: project, ctx } : undefined;
    const driven = sort.length === 0 ? oneProject : undefined;
    const page = { count, offset, columns, kept };
    const prefix = driven && prefixDriver(driven, filterParams);
    const dates = driven && !prefix && !planOnce ? dateRangePair(filterParams, (name) => isDateParameter(name, driven.type, parameters)) : undefined;
    const tokenCode = driven && !prefix && !dates && !planOnce ? tokenCodeDriver(driven, filterParams) : undefined;
    const numeric = driven && !prefix && !dates && !tokenCode && !planOnce ? numericDriver(driven, filterParams) : undefined;
    // Keys and string prefixes select few rows (sorting them is cheaper than growing windows that
    // few rows of the sort parameter meet); cursors have their own order.
    const sortedRows =
      oneProject && sort.length === 1 && !cursorMode && !planOnce && !filterParams.some(([name, value]) => stringPrefixRange(name, value, paramTypes, parameters))
        ? sortWindow(oneProject, sort)
        : undefined;
    // A key filter drives the page whatever its order (sorted, cursor or not): its few rows are the candidates.
    const keyed = oneProject && !prefix && planOnce ? keyDrivenConditions(oneProject, filterParams) : undefined;
    const rows =
      (prefix && (await orderedMatchesPage(driven!, prefix, page))) ||
      (dates && (await dateRangePage(driven!, dates, page))) ||
      (tokenCode?.alone && (await orderedMatchesPage(driven!, tokenCode, page))) ||
      (numeric && (await numeric.unranged()) && (await orderedMatchesPage(driven!, numeric, page))) ||
      (tokenCode &&
        !tokenCode.alone &&
        (await growingWindowPage(driven!, tokenCode.matches, 'ASC', tokenCode.others, page, tokenCode.holdsEveryRow))) ||
      (sortedRows && (await growingWindowPage(oneProject!, sortedRows, sort[0].descending ? 'DESC' : 'ASC', filterParams, page))) ||
      (await pageRows(services.db, {
        args: keyed?.args ?? args,
        where: keyed?.where ?? whereSql,
        sort,
        count,
        offset,
        position,
        types: paramTypes,
        multiType,
        parameters,
        columns,
        kept,
        planOnce,
        // A super admin's search of every project reads each project's rows through its project-first indexes.
        projects: scope.projectIds === undefined && project === undefined ? everyProject('resource') : undefined,
      }));
    result.matches = rows.rows;
    const paging = result.paging;
    const key = (row: SearchRow, direction: 'n' | 'p'): string =>
      encodeCursor(services.config.fhirBaseUrl, {
        direction,
        lastUpdated: row.lastUpdated,
        id: row.id,
        resourceType: row.resourceType,
        search: signature(),
      });
    const first = rows.rows[0];
    const last = rows.rows[rows.rows.length - 1];
    if (cursorMode) {
      const backwards = position?.direction === 'p';
      const hasAfter = backwards ? true : rows.more;
      const hasBefore = backwards ? rows.more : position !== undefined || offset > 0;
      if (hasAfter && last) paging.next = { cursor: key(last, 'n') };
      if (hasBefore && first) paging.previous = { cursor: key(first, 'p') };
    } else {
      if (rows.more) paging.next = { offset: offset + count };
      if (offset > 0) paging.previous = { offset: Math.max(0, offset - count) };
    }
    result.includes = await restrictToPolicy(services, scope, await includes(services, scope, params, result.matches, tolerate), valueSets);
  }

  if (summary === 'count' || totalMode !== 'none') {
    const known =
      summary !== 'count' && count > 0 && position === undefined && !result.paging.next && (offset === 0 || result.matches.length > 0)
        ? offset + result.matches.length
        : undefined;
    const proven = result.matches.length + offset + (result.paging.next ? 1 : 0);
    const exactCount = () => exactCountQuery(services, typeList, scope, filterParams, valueSets);
    result.total = await total(services, args, whereSql, summary === 'count' ? 'accurate' : totalMode, known, proven, exactCount, dependency);
  }
  return result;
}

/** The one project a search reads: the caller's, or the one `_project` names (super admins). */
function searchedProject(scope: Scope, filterParams: readonly [string, string][]): string | undefined {
  if (scope.projectIds) return scope.projectIds.length === 1 ? scope.projectIds[0] : undefined;
  const named = filterParams.filter(([name]) => name === '_project').map(([, value]) => splitOr(value));
  return named.length === 1 && named[0].length === 1 ? unescape(named[0][0]) : undefined;
}

/** What every search of `typeList` asks before its parameters: the type, the project, not deleted, the AccessPolicy's criteria. */
function baseConditions(identity: Identity, typeList: readonly string[] | undefined, scope: Scope, ctx: CompileContext): string[] {
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
    // The AccessPolicy's criteria for a type narrow every search of it (issue 3).
    const condition = policyCondition(identity, type, ctx);
    if (!condition) continue;
    where.push(typeList?.length === 1 ? `(${condition})` : `(r."resourceType" <> ${args.add(type)} OR (${condition}))`);
  }
  return where;
}

function scopeOf(identity: Identity): Scope {
  return { projectIds: identity.superAdmin ? undefined : [identity.projectId] };
}

/** Whether a parameter name ends in the `:in` or `:not-in` modifier (also at the end of a chain or `_has`). */
function usesValueSet(name: string): boolean {
  return name.endsWith(':in') || name.endsWith(':not-in');
}

/**
 * The value sets named by `:in`/`:not-in` in the search (and in the caller's AccessPolicy criteria
 * for its types, which search applies too), each expanded once. Which URLs are needed comes from
 * a discovery pass that compiles those parameters with throwaway arguments: it sees through
 * chains and `_has`, and skips parameters that are invalid anyway (their own error is reported
 * when the search compiles them for real). Failures are kept per URL and raised by the parameter
 * that uses it, so lenient handling treats them like any other bad value.
 */
async function expandValueSets(
  services: SearchServices,
  scope: Scope,
  typeList: readonly string[] | undefined,
  paramTypes: readonly string[],
  params: readonly [string, string][],
  known?: CompileContext['valueSets'],
): Promise<Map<string, readonly ValueSetMember[] | OperationOutcomeError> | undefined> {
  const lists: { types: readonly string[]; params: [string, string][] }[] = [];
  const wanted = params.filter(([name]) => usesValueSet(name));
  if (wanted.length > 0) lists.push({ types: paramTypes, params: wanted });
  for (const type of typeList ?? []) {
    const criteria = policyCriteria(services.identity, type)?.filter(([name]) => usesValueSet(name));
    if (criteria?.length) lists.push({ types: [type], params: criteria });
  }
  if (lists.length === 0) return undefined;
  const urls = new Map<string, string>();
  for (const list of lists) {
    for (const [name, value] of list.params) {
      const found = new Set<string>();
      const discovery: CompileContext = {
        args: new SqlArgs(),
        scope,
        fhirBase: services.config.fhirBaseUrl,
        depth: 0,
        wantedValueSets: found,
        parameters: services.parameters,
      };
      try {
        compileParameter(name, value, list.types, 'r', discovery);
      } catch {
        // Reported when the parameter is compiled for the search.
      }
      for (const url of found) if (!urls.has(url) && !known?.has(url)) urls.set(url, name);
    }
  }
  const expansions = new Map<string, readonly ValueSetMember[] | OperationOutcomeError>();
  for (const [url, name] of urls) expansions.set(url, await expandForSearch(services.db, services.identity, url, name));
  return expansions;
}

// Result-control parameters -----------------------------------------------------------------------

function parseCount(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_COUNT;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 0) {
    throw errors.invalid(`_count must be an integer from 0 to ${MAX_COUNT}, not "${raw}"`, '_count');
  }
  return Math.min(value, MAX_COUNT);
}

function parseOffset(raw: string | undefined): number {
  if (raw === undefined) return 0;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 0) {
    throw errors.invalid(`_offset must be an integer from 0 to ${MAX_OFFSET}, not "${raw}"`, '_offset');
  }
  if (value > MAX_OFFSET) {
    throw errors.invalid(
      `_offset ${value} is above the maximum of ${MAX_OFFSET}: use _sort=_lastUpdated and follow the _cursor links to page further`,
      '_offset',
    );
  }
  return value;
}

type TotalMode = 'none' | 'estimate' | 'accurate';

function parseTotal(raw: string | undefined): TotalMode {
  if (raw === undefined) return 'none';
  if (raw === 'none' || raw === 'estimate' || raw === 'accurate') return raw;
  throw errors.invalid(`_total must be none, estimate or accurate, not "${raw}"`, '_total');
}

function parseSort(raw: string | undefined, types: readonly string[], parameters: ProjectParameters | undefined): SortKey[] {
  if (raw === undefined) return [];
  const keys = raw.split(',').map((part) => part.trim());
  if (keys.some((key) => key === '' || key === '-')) throw errors.invalid(`Invalid _sort "${raw}"`, '_sort');
  return keys.map((key) => {
    const descending = key.startsWith('-');
    const code = descending ? key.slice(1) : key;
    if (code !== '_id' && code !== '_lastUpdated') {
      let param: SearchParameter;
      try {
        param = findParameter(code, types, code, parameters);
      } catch {
        throw errors.invalid(`Cannot sort by "${code}": it is not a search parameter of ${types.join(', ')}`, '_sort');
      }
      if (!isSearchable(param)) throw errors.invalid(`Cannot sort by ${code}: ${param.type} parameters do not sort`, '_sort');
    }
    return { code, descending };
  });
}

// The page ----------------------------------------------------------------------------------------

const COLUMNS = `r."resourceType", r.id, r."projectId", r."versionId"::text AS "versionId", r."lastUpdated", r.content::text AS content`;
/** COLUMNS without the content (SearchOptions.withoutContent). */
const KEY_COLUMNS = `r."resourceType", r.id, r."projectId", r."versionId"::text AS "versionId", r."lastUpdated"`;
/** COLUMNS and KEY_COLUMNS as read from a subquery `u` that selected them. */
const KEY_COLUMNS_OF_U = 'u."resourceType", u.id, u."projectId", u."versionId", u."lastUpdated"';
const COLUMNS_OF_U = `${KEY_COLUMNS_OF_U}, u.content`;

interface RawRow {
  resourceType: string;
  id: string;
  projectId: string;
  versionId: string;
  lastUpdated: unknown;
  /** Absent under KEY_COLUMNS. */
  content?: string;
}

function toRow(raw: RawRow): SearchRow {
  return {
    resourceType: raw.resourceType,
    id: raw.id,
    projectId: raw.projectId,
    versionId: raw.versionId,
    lastUpdated: toInstant(raw.lastUpdated),
    text: raw.content ?? '',
  };
}

/** The SQL expression a sort key orders by: a resource column or the min/max of its index rows. */
function sortExpression(key: SortKey, types: readonly string[], args: SqlArgs, parameters: ProjectParameters | undefined): string {
  if (key.code === '_id') return 'r.id';
  if (key.code === '_lastUpdated') return 'r."lastUpdated"';
  const param: SearchParameter = findParameter(key.code, types, '_sort', parameters);
  const agg = key.descending ? 'max' : 'min';
  const from = (table: string, column: string): string =>
    `(SELECT ${agg}(${column}) FROM ${table} o WHERE o."projectId" = r."projectId" AND o."resourceType" = r."resourceType"` +
    ` AND o."resourceId" = r.id AND o.code = ${args.add(key.code)})`;
  switch (param.type) {
    case 'string':
      // Byte order, the string index's (text_pattern_ops), whatever the database's collation.
      return from('string_index', 'o.value COLLATE "C"');
    case 'token':
      return from('token_index', 'o.value');
    case 'date':
      return key.descending ? from('date_index', 'COALESCE(o."end", o.start)') : from('date_index', 'COALESCE(o.start, o."end")');
    case 'number':
      // A Range (RiskAssessment probabilityRange) sorts as a quantity Range does, below.
      return key.descending ? from('number_index', 'COALESCE(o.high, o.value)') : from('number_index', 'o.value');
    case 'quantity':
      // A Range sorts by its low ascending and its high descending, as a Period does; an open
      // end is infinite, so it comes first.
      return key.descending ? from('quantity_index', 'COALESCE(o.high, o.value)') : from('quantity_index', 'o.value');
    case 'reference':
      return from('reference_index', `COALESCE(o."targetType" || '/' || o."targetId", o.url)`);
    case 'uri':
      return from('uri_index', 'o.value');
    default:
      throw errors.invalid(`Cannot sort by ${key.code}`, '_sort');
  }
}

interface PageStatement {
  args: SqlArgs;
  where: string;
  sort: SortKey[];
  count: number;
  offset: number;
  position: CursorPosition | undefined;
  types: readonly string[];
  multiType: boolean;
  parameters: ProjectParameters | undefined;
  columns: string;
  kept: KeptPages | undefined;
  planOnce: boolean;
  /** An SQL array of projectIds (everyProject) to read the page from one project at a time, or undefined. */
  projects: string | undefined;
}

async function pageRows(db: SqlExecutor, page: PageStatement): Promise<{ rows: SearchRow[]; more: boolean }> {
  const { sort, count, offset, position, multiType } = page;
  const args = new SqlArgs();
  args.values.push(...page.args.values);
  const conditions = [page.where];
  // Without _sort (SPEC 4.8 rule 3) the order is unspecified: no keys, so the planner may stop at
  // the first `count` matches of whatever index it drives from.
  const keys: { expression: string; direction: string }[] = [];
  let backwards = false;
  if (position) {
    backwards = position.direction === 'p';
    const keyColumns = multiType ? 'r."lastUpdated", r.id, r."resourceType"' : 'r."lastUpdated", r.id';
    const keyValues = [args.add(position.lastUpdated, 'timestamptz'), args.add(position.id)];
    if (multiType) keyValues.push(args.add(position.resourceType));
    conditions.push(`(${keyColumns}) ${backwards ? '<' : '>'} (${keyValues.join(', ')})`);
    const direction = backwards ? 'DESC' : 'ASC';
    keys.push({ expression: 'r."lastUpdated"', direction }, { expression: 'r.id', direction });
    if (multiType) keys.push({ expression: 'r."resourceType"', direction });
  } else if (sort.length > 0) {
    for (const key of sort) {
      // Columns are never null; spelling NULLS LAST on them would keep a backward index scan
      // from serving a descending sort.
      const nulls = key.code === '_id' || key.code === '_lastUpdated' ? '' : ' NULLS LAST';
      keys.push({ expression: sortExpression(key, page.types, args, page.parameters), direction: `${key.descending ? 'DESC' : 'ASC'}${nulls}` });
    }
    // Ties are broken by id (in the direction of a lone _lastUpdated key, so one index serves both).
    const idDirection = sort.length === 1 && sort[0].code === '_lastUpdated' && sort[0].descending ? 'DESC' : 'ASC';
    keys.push({ expression: 'r.id', direction: idDirection });
    if (multiType) keys.push({ expression: 'r."resourceType"', direction: idDirection });
  }
  const orderBy = (spell: (key: { expression: string }, index: number) => string): string =>
    keys.length > 0 ? ` ORDER BY ${keys.map((key, i) => `${spell(key, i)} ${key.direction}`).join(', ')}` : '';
  const limit = args.add(count + 1);
  const skip = position ? '' : ` OFFSET ${args.add(offset)}`;
  let sql: string;
  if (page.projects === undefined) {
    sql = `SELECT ${page.columns} FROM resource r WHERE ${conditions.join(' AND ')}${orderBy((key) => key.expression)} LIMIT ${limit}${skip}`;
  } else {
    // A super admin's search of every project: the indexes lead with projectId, so a statement
    // without one can only scan a whole index (~200 ms at 1,100,000 resources). Each project's
    // first offset + count + 1 rows, read with its projectId (the planner carries `r.projectId =
    // p.id` into every index condition), then the page of their merge: one index probe per
    // project and the few rows each gives.
    const sortColumns = keys.map((key, i) => `, ${key.expression} AS k${i}`).join('');
    const each =
      `SELECT ${page.columns}${sortColumns} FROM resource r WHERE r."projectId" = p.id AND ${conditions.join(' AND ')}` +
      `${orderBy((key) => key.expression)} LIMIT ${args.add(offset + count + 1)}`;
    const output = page.columns === COLUMNS ? COLUMNS_OF_U : KEY_COLUMNS_OF_U;
    sql = `SELECT ${output} FROM unnest(${page.projects}) p(id) CROSS JOIN LATERAL (${each}) u${orderBy((_, i) => `u.k${i}`)} LIMIT ${limit}${skip}`;
  }
  return runPage(db, sql, args, count, backwards, page.kept, page.planOnce);
}

type KeptPages = { cache: SearchCache; dependency: WriteDependency };

/** Runs a page statement that asks for `count + 1` rows (or answers it from the kept pages). */
async function runPage(
  db: SqlExecutor,
  sql: string,
  args: SqlArgs,
  count: number,
  backwards: boolean,
  kept: KeptPages | undefined,
  planOnce: boolean,
): Promise<{ rows: SearchRow[]; more: boolean }> {
  const key = kept && statementKey(sql, args.values);
  const page = key ? kept.cache.getPage<{ rows: readonly SearchRow[]; more: boolean }>(key) : undefined;
  // A kept page is shared: callers get their own array (rows are not changed by anyone).
  if (page) return { rows: [...page.rows], more: page.more };
  const at = kept?.cache.now();
  const raw = await db.query<RawRow>(sql, args.values, { planOnce });
  const more = raw.length > count;
  const rows = raw.slice(0, count).map(toRow);
  if (backwards) rows.reverse();
  if (key && at !== undefined) kept.cache.setPage(key, kept.dependency, at, { rows: [...rows], more }, rows.length);
  return { rows, more };
}

/** A search of one type in one project, whose page a driver reads from an index of its own choosing. */
interface DrivenSearch {
  services: SearchServices;
  type: string;
  scope: Scope;
  projectId: string;
  /** The search's compile context (its value sets, project parameters); its arguments are not reused. */
  ctx: CompileContext;
}

type PageShape = { count: number; offset: number; columns: string; kept: KeptPages | undefined };

/**
 * The search's conditions on the resource `r` without the filters a driver reads itself, compiled
 * anew with arguments of their own (the driver adds its own to them).
 */
function otherConditions(search: DrivenSearch, others: readonly [string, string][]): { ctx: CompileContext; where: string } {
  const ctx = freshContext(search);
  const where = [
    ...baseConditions(search.services.identity, [search.type], search.scope, ctx),
    ...others.map(([name, value]) => compileParameter(name, value, [search.type], 'r', ctx)),
    ...dateRangeConditions(others, [search.type], ctx),
  ];
  return { ctx, where: where.join(' AND ') };
}

/**
 * The conditions of a search in one project with a key filter (selectsByKey: a reference to given
 * resources, an identifier) and other filters, written so that the key's index rows are the
 * candidates and the other filters are tested on those rows, before any resource row is read:
 * `r.id IN (SELECT d.id FROM (<the key's index rows>) d WHERE <the other filters on d>)`. As
 * EXISTS conditions on `r` (the general form), the other filters can only be tested once the
 * resource row is joined: `Observation?subject=Patient/1&code=8867-4` read the 10 Observations of
 * the patient to keep the one with that code (pgbench of the statement, generic plan: 5,300-6,200
 * -> 11,300-11,500 per second). The rows `d` have the columns the filters correlate on (projectId, resourceType, id);
 * `_lastUpdated` (a column of the resource only) stays on `r`. The key selects few rows, so the
 * statement is planned once like every key search. Its cost grows with the key's rows, one index
 * probe each: for a patient with 100,000 Observations, 0.4-0.5 s whatever the code, where the
 * EXISTS form took 0.2 s for a code most of them have (it stops at the page) and 2 s for one none
 * has. Undefined when no filter drives (the key is a chain, `_id`, `:identifier`), or the key is
 * the only filter (nothing to test before the join).
 */
function keyDrivenConditions(search: DrivenSearch, filters: readonly [string, string][]): { args: SqlArgs; where: string } | undefined {
  const at = filters.findIndex(([name, value]) => !name.startsWith('_') && !name.includes('.') && selectsByKey(name, value, [search.type], search.ctx.parameters));
  if (at < 0) return undefined;
  const others = filters.filter((_, i) => i !== at);
  const onRows = others.filter(([name]) => !testedOnResource(name));
  if (onRows.length === 0) return undefined;
  const ctx = freshContext(search);
  let key: IndexRowsCondition | undefined;
  const [name, value] = filters[at];
  const condition = compileParameter(name, value, [search.type], 'r', { ...ctx, onRows: (found) => (key = found) });
  if (!key || key.depth !== 0 || !condition.startsWith('EXISTS (')) return undefined;
  const scope = `${key.alias}."projectId" = ${ctx.args.add(search.projectId)} AND ${key.alias}."resourceType" = ${ctx.args.add(search.type)}`;
  const { candidates, onResource } = candidateConditions(search, others, ctx);
  const where = [
    ...onResource,
    // `IS TRUE` keeps the tests per candidate row (a subplan each): as semi-joins, a generic plan
    // (values unknown) may hash or merge a common code's 50,000 index rows against the 10 candidates.
    `r.id IN (SELECT d.id FROM (${indexRowsSource(key, scope)}) d WHERE (${candidates.join(' AND ')}) IS TRUE)`,
  ];
  return { args: ctx.args, where: where.join(' AND ') };
}

/**
 * A search's filters compiled in `ctx` for a statement that tests them on candidate rows `d` of
 * (projectId, resourceType, id) before it reads the resources `r`: the conditions on `d`, and
 * those on `r` (the base conditions and the filters testedOnResource).
 */
function candidateConditions(search: DrivenSearch, filters: readonly [string, string][], ctx: CompileContext): { candidates: string[]; onResource: string[] } {
  const onRows = filters.filter(([name]) => !testedOnResource(name));
  return {
    candidates: [
      ...onRows.map(([name, value]) => compileParameter(name, value, [search.type], 'd', ctx)),
      ...dateRangeConditions(onRows, [search.type], ctx, 'd'),
    ],
    onResource: [
      ...baseConditions(search.services.identity, [search.type], search.scope, ctx),
      ...filters.filter(([name]) => testedOnResource(name)).map(([name, value]) => compileParameter(name, value, [search.type], 'r', ctx)),
    ],
  };
}

/**
 * Whether a filter is tested on the resource row rather than on candidate rows of
 * (projectId, resourceType, id): `_lastUpdated` reads a column only the resource has, and
 * `_project` is already the candidates' project.
 */
function testedOnResource(name: string): boolean {
  return name === '_project' || name.split(':')[0] === '_lastUpdated';
}

/** The rows of an index-rows condition as a table of (projectId, resourceType, id), within `scope` (a condition on its alias). */
function indexRowsSource(rows: IndexRowsCondition, scope: string): string {
  const { table, alias, codeArg, condition } = rows;
  return (
    `SELECT ${alias}."projectId", ${alias}."resourceType", ${alias}."resourceId" AS id FROM ${table} ${alias}` +
    ` WHERE ${scope} AND ${alias}.code = ${codeArg}${condition ? ` AND (${condition})` : ''}`
  );
}

/** The search's compile context with arguments of its own, for a statement compiled anew. */
function freshContext(search: DrivenSearch): CompileContext {
  return { ...search.ctx, args: new SqlArgs(), depth: 0, onRows: undefined };
}

/**
 * A filter whose matches an index lists in an order of their own (by a first matching value,
 * then id), the SQL of those matches (with an optional window of index rows), and the other filters.
 */
interface OrderedDriver {
  matches: (ctx: CompileContext, window?: number) => string;
  others: [string, string][];
}

/** The first filter that is a one-value string prefix (stringPrefixRange), if any. */
function prefixDriver(search: DrivenSearch, filters: readonly [string, string][]): OrderedDriver | undefined {
  for (const [at, [name, value]] of filters.entries()) {
    const range = stringPrefixRange(name, value, [search.type], search.ctx.parameters);
    if (range) {
      return {
        matches: (ctx, window) => stringPrefixMatches(range, search.type, search.projectId, ctx, window),
        others: filters.filter((_, i) => i !== at),
      };
    }
  }
  return undefined;
}

/**
 * The first token code among the filters (isTokenCodeMatch: `Observation?code=http://loinc.org|8867-4`).
 * `alone` when it is the only filter besides `_project`: its window of index rows then holds the
 * page unless the whole match is small, so reading the whole match instead is cheap
 * (orderedMatchesPage). With other filters that could drop most of the window, the whole match of
 * a common code (50,000 rows, or every Observation's status) must not be de-duplicated: those
 * take growing windows, then the general statement (growingWindowPage).
 */
function tokenCodeDriver(
  search: DrivenSearch,
  filters: readonly [string, string][],
): (OrderedDriver & { alone: boolean; holdsEveryRow: (window: number) => Promise<boolean> }) | undefined {
  const at = filters.findIndex(([name, value]) => isTokenCodeMatch(name, value, [search.type], search.ctx.parameters));
  if (at < 0) return undefined;
  const [name, value] = filters[at];
  const others = filters.filter((_, i) => i !== at);
  return {
    matches: (ctx, window) => tokenCodeMatches(name, value, search.type, search.projectId, ctx, window),
    others,
    alone: others.every(([other]) => other === '_project'),
    holdsEveryRow: async (window) => {
      const ctx = freshContext(search);
      const [row] = await search.services.db.query<{ n: number }>(tokenCodeRowCount(name, value, search.type, search.projectId, ctx, window), ctx.args.values);
      return row.n < window;
    },
  };
}

/**
 * A number or quantity comparison (numericRangeTable: `Observation?value-quantity=gt60`) when it
 * is the search's only filter besides `_project`, read like a lone token code (orderedMatchesPage)
 * when no row of the parameter in the project holds a Range (`unranged`, one probe of the partial
 * index on the highs): by least matching value, then id.
 */
function numericDriver(search: DrivenSearch, filters: readonly [string, string][]): (OrderedDriver & { unranged: () => Promise<boolean> }) | undefined {
  const lone = loneFilter(filters);
  if (!lone) return undefined;
  const { filter: [name, value], others } = lone;
  const table = numericRangeTable(name, value, [search.type], search.ctx.parameters);
  if (!table) return undefined;
  return {
    matches: (ctx, window) => numericRangeMatches(table, name, value, search.type, search.projectId, ctx, window),
    others,
    unranged: async () => {
      const ctx = freshContext(search);
      const [row] = await search.services.db.query<{ ranged: boolean }>(numericRangesExist(table, name, search.type, search.projectId, ctx), ctx.args.values);
      return !row.ranged;
    },
  };
}

/** The search's one filter besides `_project` (which `others` holds), if it has exactly one. */
function loneFilter(filters: readonly [string, string][]): { filter: [string, string]; others: [string, string][] } | undefined {
  const others = filters.filter(([name]) => name === '_project');
  return filters.length - others.length === 1 ? { filter: filters.find(([name]) => name !== '_project')!, others } : undefined;
}

/** Index rows a window reads per row of the page it is for (resources with several matching values, filtered ones). */
const WINDOW_FACTOR = 4;
const WINDOW_MIN = 100;

/**
 * A page of a search without _sort whose matches an OrderedDriver lists in its index's order: a
 * string prefix (`Patient?name=smi`: by each resource's first matching value, then id, the order
 * of the string index, 0014_string_index_order), a lone token code (`Observation?code=...`: by
 * first matching system, then id) or a lone number or quantity comparison (numericDriver: by least
 * matching value, then id). The page is read from the first rows of the index range
 * instead of de-duplicating every match (1,666 index rows for "smi" among 100,000 Patients,
 * 50,000 for a code among 1,000,000 Observations), and never depends on how the planner guesses
 * the project's resources are spread among other projects' (a merge by id over every project's
 * Observations, or a table scan, took 2-24 ms where this takes 0.1 ms).
 * The statement reads a window of index rows: its resources are exactly the first ones of the
 * whole order (a resource is in the window when its first matching row is), so when the window
 * yields the page and one more row, that is the page. Otherwise (few matches, filters that drop
 * most of the window, deep offsets) the same statement without the window answers. The
 * window's plan is the same for every value (an ordered range scan that stops early), so it is
 * planned once; the whole statement is planned for its values.
 */
async function orderedMatchesPage(search: DrivenSearch, driver: OrderedDriver, page: PageShape): Promise<{ rows: SearchRow[]; more: boolean }> {
  const statement = (window: number | undefined): { sql: string; args: SqlArgs } => {
    const { ctx, where } = otherConditions(search, driver.others);
    const sql =
      `SELECT ${page.columns} FROM (${driver.matches(ctx, window)}) p JOIN resource r ON r.id = p."resourceId" WHERE ${where}` +
      ` ORDER BY p.first, p."resourceId" LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
    return { sql, args: ctx.args };
  };
  const window = Math.max(WINDOW_MIN, WINDOW_FACTOR * (page.offset + page.count + 1));
  const windowed = statement(window);
  const rows = await runPage(search.services.db, windowed.sql, windowed.args, page.count, false, page.kept, true);
  if (rows.more) return rows;
  const whole = statement(undefined);
  return runPage(search.services.db, whole.sql, whole.args, page.count, false, page.kept, false);
}

/** Growing windows (growingWindowPage) grow this many times when they fall short, up to the most rows read before the general statement answers. */
const WINDOW_GROWTH = 8;
const GROWING_WINDOW_MAX = 6_400;

/** The rows a page sorted by one date or string parameter reads in its order (growingWindowPage), else undefined. */
function sortWindow(search: DrivenSearch, sort: readonly SortKey[]): ((ctx: CompileContext, window: number) => string) | undefined {
  if (sort.length !== 1 || sort[0].code.startsWith('_')) return undefined;
  const { code, descending } = sort[0];
  const param = findParameter(code, [search.type], '_sort', search.ctx.parameters);
  if (!isSearchable(param)) return undefined;
  if (param.type === 'date') return (ctx, window) => dateSortMatches(code, descending, search.type, search.projectId, ctx, window);
  if (param.type === 'string') return (ctx, window) => stringSortMatches(code, descending, search.type, search.projectId, ctx, window);
  return undefined;
}

/**
 * A page read from a window of index rows in the page's order whose resources are tested against
 * `filters` before any is read:
 *  - sorted by one date or string parameter (`Observation?code=..&_sort=-date`,
 *    `Patient?_sort=family`): that parameter's rows (dateSortMatches, index of migration 0015;
 *    stringSortMatches), instead of computing the sort value of every match (50,000 for a
 *    common code: ~470 ms; 100,000 Patients by family: ~700 ms);
 *  - unsorted, a token code with other filters (`Observation?code=..&status=final`): the code's
 *    rows (tokenCodeMatches), instead of a plan that depended on where the project's rows lie
 *    among other projects'.
 * The window's resources are the first ones of the whole order, so when they yield the page and
 * one more row, that is the page; otherwise the window grows eightfold, and past
 * GROWING_WINDOW_MAX rows (filters that few of the rows meet, a small project, resources without
 * a value, which sort last) undefined: the general statement, which then has few matches to sort
 * or a small project to read, answers; unless `holdsEveryRow` says the window held every row
 * there is (a token code's last page): then the page is the window's, in the same order as the
 * pages before it. The filters are tested on the window's rows (a subplan each, as
 * keyDrivenConditions does), so only the resources that meet them are read.
 */
async function growingWindowPage(
  search: DrivenSearch,
  matches: (ctx: CompileContext, window: number) => string,
  direction: 'ASC' | 'DESC',
  filters: readonly [string, string][],
  page: PageShape,
  holdsEveryRow?: (window: number) => Promise<boolean>,
): Promise<{ rows: SearchRow[]; more: boolean } | undefined> {
  // Index rows stand for live resources of their project and type: unless an AccessPolicy or
  // `_lastUpdated` tests the resource itself, the page is cut before any resource is read.
  const onlyImplied = !policyCriteria(search.services.identity, search.type) && !filters.some(([name]) => name.split(':')[0] === '_lastUpdated');
  for (let window = Math.max(WINDOW_MIN, WINDOW_FACTOR * (page.offset + page.count + 1)); window <= GROWING_WINDOW_MAX; window *= WINDOW_GROWTH) {
    const ctx = freshContext(search);
    const { candidates, onResource: where } = candidateConditions(search, filters, ctx);
    const rowsOf =
      `SELECT ${ctx.args.add(search.projectId)}::text AS "projectId", ${ctx.args.add(search.type)}::text AS "resourceType", g."resourceId" AS id, g.first` +
      ` FROM (${matches(ctx, window)}) g`;
    const tested =
      `SELECT d.id, d.first FROM (${rowsOf}) d${candidates.length > 0 ? ` WHERE (${candidates.join(' AND ')}) IS TRUE` : ''}` +
      (onlyImplied ? ` ORDER BY d.first ${direction}, d.id LIMIT ${ctx.args.add(page.offset + page.count + 1)}` : '');
    const sql =
      `SELECT ${page.columns} FROM (${tested}) p JOIN resource r ON r.id = p.id WHERE ${where.join(' AND ')}` +
      ` ORDER BY p.first ${direction}, p.id LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
    const rows = await runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, false);
    if (rows.more || (holdsEveryRow && (await holdsEveryRow(window)))) return rows;
  }
  return undefined;
}

/** A date parameter's lower and upper bound among a search's filters (dateRangeConditions' first pair), and the other filters. */
interface DateRangePair {
  name: string;
  lower: string;
  upper: string;
  others: [string, string][];
}

/** The first pair of bounds on a date parameter (`isDate`), or a lone bound (openDateRange). */
function dateRangePair(filters: readonly [string, string][], isDate: (name: string) => boolean): DateRangePair | undefined {
  for (const [at, [name, lower]] of filters.entries()) {
    if (!isDate(name) || dateBoundKind(lower) !== 'lower' || filters.findIndex(([n, v]) => n === name && dateBoundKind(v) === 'lower') !== at) continue;
    const upperAt = filters.findIndex(([n, v]) => n === name && dateBoundKind(v) === 'upper');
    if (upperAt < 0) continue;
    return { name, lower, upper: filters[upperAt][1], others: filters.filter((_, i) => i !== at && i !== upperAt) };
  }
  return openDateRange(filters, isDate);
}

/** Whether `name` (no modifier or chain) is a searchable date parameter of `type`. */
function isDateParameter(name: string, type: string, parameters: ProjectParameters | undefined): boolean {
  if (name.startsWith('_') || name.includes(':') || name.includes('.')) return false;
  try {
    const param = findParameter(name, [type], name, parameters);
    return param.type === 'date' && isSearchable(param);
  } catch {
    return false;
  }
}

/** The bounds that every stored date meets (FHIR's years run from 0001 to 9999). */
const EARLIEST_DATE = 'ge0001-01-01';
const LATEST_DATE = 'le9999-12-31';

/**
 * A lone one-sided date bound (`Observation?date=gt2024-06-01`, besides `_project`) as a pair
 * whose other side every stored date meets, so that the GiST index's rows, which stop at the
 * page, drive it (dateRangePage). The result is the same: the added bound holds for every row.
 * Alone only: with other filters, a bound that half the rows meet would drive a page that those
 * filters may thin out.
 */
function openDateRange(filters: readonly [string, string][], isDate: (name: string) => boolean): DateRangePair | undefined {
  const lone = loneFilter(filters);
  if (!lone || !isDate(lone.filter[0])) return undefined;
  const { filter: [name, value], others } = lone;
  const kind = dateBoundKind(value);
  if (kind === 'lower') return { name, lower: value, upper: LATEST_DATE, others };
  if (kind === 'upper') return { name, lower: EARLIEST_DATE, upper: value, others };
  return undefined;
}

/**
 * A page of a search without _sort in one project whose filters bound a date parameter from
 * both sides (`Observation?date=ge2023-03-01&date=le2023-03-01`): the resources are joined from
 * dateRangeRows (each once, in the GiST index's order), so the statement stops at the page
 * instead of de-duplicating every match. With no other filter (bar `_project`) the plan is the
 * same for every range (the index scan stops at the page however many rows the range holds), so
 * it is planned once. Undefined when the pair is not one after all (not a date parameter).
 */
async function dateRangePage(search: DrivenSearch, pair: DateRangePair, page: PageShape): Promise<{ rows: SearchRow[]; more: boolean } | undefined> {
  const { ctx, where } = otherConditions(search, pair.others);
  const source = dateRangeRows(pair.name, pair.lower, pair.upper, search.type, search.projectId, ctx);
  if (!source) return undefined;
  const sql =
    `SELECT ${page.columns} FROM (${source}) g JOIN resource r ON r.id = g."resourceId" WHERE ${where}` +
    ` LIMIT ${ctx.args.add(page.count + 1)} OFFSET ${ctx.args.add(page.offset)}`;
  const planOnce = pair.others.every(([name]) => name === '_project');
  return runPage(search.services.db, sql, ctx.args, page.count, false, page.kept, planOnce);
}

// Totals ------------------------------------------------------------------------------------------

/**
 * `estimate`: the planner's row estimate for the search (EXPLAIN, no rows read), never below what
 * the page itself proves. `accurate`: the estimate first; under ACCURATE_COUNT_THRESHOLD an exact
 * count, otherwise the estimate (or a 400 `too-costly` when ACCURATE_COUNT_OVER_THRESHOLD=refuse).
 * When the page shows the whole result (no next page), the total is known exactly without a count.
 */
async function total(
  services: SearchServices,
  args: SqlArgs,
  where: string,
  mode: TotalMode,
  known: number | undefined,
  seen: number,
  exactCount: () => Promise<{ sql: string; args: unknown[] } | undefined>,
  dependency: WriteDependency | undefined,
): Promise<SearchTotal> {
  if (known !== undefined) return { value: known, exact: true };
  const counts = mode === 'accurate' && dependency ? services.searchCache : undefined;
  const statement = counts ? await countStatement(exactCount, where, args) : undefined;
  const cacheKey = statement && statementKey(statement.sql, statement.args);
  const cached = cacheKey ? counts!.get(cacheKey) : undefined;
  if (cached !== undefined) return { value: cached, exact: true };
  const estimate = Math.max(await plannerEstimate(services, where, args), seen);
  if (mode !== 'accurate') return { value: estimate, exact: false };
  const threshold = services.config.accurateCountThreshold;
  if (estimate >= threshold) {
    if (services.config.accurateCountOverThreshold === 'refuse') {
      throw new OperationOutcomeError(
        outcome([
          issue(
            'too-costly',
            `_total=accurate is refused: about ${estimate} resources match, and this server counts exactly only below ${threshold}. Use _total=estimate or narrow the search`,
            '_total',
          ),
        ]),
        400,
      );
    }
    return { value: estimate, exact: false };
  }
  const { sql, args: values } = statement ?? (await countStatement(exactCount, where, args));
  const at = counts?.now();
  const counted = await services.db.query<{ n: unknown }>(sql, values);
  const value = Number(counted[0]?.n ?? 0);
  if (counts && cacheKey && at !== undefined) counts.set(cacheKey, dependency!, at, value);
  return { value, exact: true };
}

/** The planner's row estimate for the search (EXPLAIN, no rows read), kept a few seconds (search-cache.ts). */
async function plannerEstimate(services: SearchServices, where: string, args: SqlArgs): Promise<number> {
  const sql = `EXPLAIN (FORMAT JSON) SELECT 1 FROM resource r WHERE ${where}`;
  const key = services.searchCache && statementKey(sql, args.values);
  const kept = key ? services.searchCache!.getEstimate(key) : undefined;
  if (kept !== undefined) return kept;
  const rows = await services.db.query<{ 'QUERY PLAN': unknown }>(sql, args.values);
  const plan = rows[0]?.['QUERY PLAN'];
  const parsed = (typeof plan === 'string' ? JSON.parse(plan) : plan) as { Plan: { 'Plan Rows': number } }[];
  const estimate = Math.round(parsed[0]?.Plan?.['Plan Rows'] ?? 0);
  if (key) services.searchCache!.setEstimate(key, estimate);
  return estimate;
}

/** The statement of an exact count: from the index tables when the search allows, else through `resource`. */
async function countStatement(
  exactCount: () => Promise<{ sql: string; args: unknown[] } | undefined>,
  where: string,
  args: SqlArgs,
): Promise<{ sql: string; args: unknown[] }> {
  return (await exactCount()) ?? { sql: `SELECT count(*)::int AS n FROM resource r WHERE ${where}`, args: args.values };
}

/**
 * Whose writes can change the count of a search (search-cache.ts), or undefined when it must not be
 * kept: a value set's expansion changes with terminology writes that are not resource writes. A
 * search of one or more named types whose parameters read only those types' own index rows depends
 * on writes of those types; one that follows references elsewhere (chains, _has), on any write of
 * the project. The caller's AccessPolicy criteria are parameters of the same search.
 */
function writeDependency(
  identity: Identity,
  scope: Scope,
  typeList: readonly string[] | undefined,
  filters: readonly [string, string][],
): WriteDependency | undefined {
  const criteria = (typeList ?? []).flatMap((type) => policyCriteria(identity, type) ?? []);
  const names = [...filters, ...criteria].map(([name]) => name);
  if (names.some(usesValueSet)) return undefined;
  const ownRowsOnly = names.every((name) => !name.includes('.') && !name.startsWith('_has'));
  return { projectIds: scope.projectIds, types: ownRowsOnly ? typeList : undefined };
}

/**
 * For each date parameter given both a lower (ge, gt) and an upper (le, lt) bound, one value
 * each, the redundant condition an index serves (conditions.ts, dateRangeCondition): without it
 * the planner can only walk the resources, as neither bound alone is selective.
 */
function dateRangeConditions(filters: readonly [string, string][], types: readonly string[], ctx: CompileContext, alias = 'r'): string[] {
  const lowers = new Map<string, string>();
  const uppers = new Map<string, string>();
  for (const [name, value] of filters) {
    const kind = dateBoundKind(value);
    const bounds = kind === 'lower' ? lowers : kind === 'upper' ? uppers : undefined;
    if (bounds && !bounds.has(name)) bounds.set(name, value);
  }
  const conditions: string[] = [];
  for (const [name, lower] of lowers) {
    const upper = uppers.get(name);
    if (upper === undefined) continue;
    const mark = ctx.args.values.length;
    let condition: string | undefined;
    try {
      condition = dateRangeCondition(name, lower, upper, types, alias, ctx);
    } catch {
      // Not a date parameter after all: its own condition says what is wrong, if anything.
    }
    if (condition) conditions.push(condition);
    else ctx.args.values.length = mark;
  }
  return conditions;
}

/** Above this many projects, a super admin's count names them in one condition instead of counting each apart. */
const MAX_PROJECTS_COUNTED_APART = 20;

/**
 * The statement of an exact count from the index tables (indexCountQuery), or undefined to count
 * through the resource table. A super admin's search spans every project, and the index tables
 * are keyed by project first: the count is then the sum of one count per project, each with the
 * projectId that lets the planner use those keys (and carry it from one table to the next).
 */
async function exactCountQuery(
  services: SearchServices,
  typeList: readonly string[] | undefined,
  scope: Scope,
  filters: readonly [string, string][],
  valueSets: CompileContext['valueSets'],
): Promise<{ sql: string; args: unknown[] } | undefined> {
  if (typeList?.length !== 1) return undefined;
  const type = typeList[0];
  if (policyCriteria(services.identity, type)) return undefined;
  if (filters.some(([name]) => name.split(/[:.]/)[0] === '_lastUpdated')) return undefined;
  const args = new SqlArgs();
  if (scope.projectIds !== undefined || filters.length === 0) {
    const sql = indexCountQuery(services, type, scope, filters, valueSets, args);
    return sql ? { sql, args: args.values } : undefined;
  }
  const projects = await services.db.query<{ id: string }>(`SELECT unnest(${everyProject('resource')}) AS id`);
  if (projects.length > MAX_PROJECTS_COUNTED_APART) {
    const sql = indexCountQuery(services, type, scope, filters, valueSets, args);
    return sql ? { sql, args: args.values } : undefined;
  }
  const counts: string[] = [];
  for (const { id } of projects) {
    const sql = indexCountQuery(services, type, { projectIds: [id] }, filters, valueSets, args);
    if (!sql) return undefined;
    counts.push(`(${sql})`);
  }
  return { sql: `SELECT (${counts.length > 0 ? counts.join(' + ') : '0'})::int AS n`, args: args.values };
}

/**
 * An exact count of one type in `scope` that reads the index tables instead of the resource
 * table (exactCountQuery checks that the search allows it), or undefined. Counting
 * through `resource` visits one heap row per match (50,000 matches: ~0.5 s); index rows alone
 * answer in index-only scans. It rests on an invariant of the store (src/storage/sql.ts,
 * repository.ts): a resource has index rows exactly while its current version is not deleted,
 * and they carry its project and type, so a matching index row stands for a live resource.
 *  - No filter: every row of the type minus the deleted ones (index `resource_deleted_idx`).
 *  - Only `p=ge..&p=le..` on a date parameter: matching rows counted without de-duplication
 *    (`countDateRange`).
 *  - Otherwise: the distinct resources of one parameter's matching rows (a token or reference
 *    one when there is one: its index yields rows in resource order), the other parameters as
 *    conditions on them; the planner is free to start from any of them.
 */
function indexCountQuery(
  services: SearchServices,
  type: string,
  scope: Scope,
  filters: readonly [string, string][],
  valueSets: CompileContext['valueSets'],
  args: SqlArgs,
): string | undefined {
  const typeArg = args.add(type);
  const inScope = (alias: string, table: string): string => {
    const scoped = scopeSql(alias, 'projectId', scope, args) ?? `${alias}."projectId" = ANY(${everyProject(table)})`;
    return `${alias}."resourceType" = ${typeArg} AND ${scoped}`;
  };
  if (filters.length === 0) {
    // The primary key (resourceType, id) serves every project at once.
    const scoped = scopeSql('r', 'projectId', scope, args);
    const rows = `FROM resource r WHERE r."resourceType" = ${typeArg}${scoped ? ` AND ${scoped}` : ''}`;
    return `SELECT ((SELECT count(*) ${rows}) - (SELECT count(*) ${rows} AND r.deleted))::int AS n`;
  }
  const ctx: CompileContext = { args, scope, fhirBase: services.config.fhirBaseUrl, depth: 0, valueSets, parameters: services.parameters };
  const compiled = filters.map(([name, value]) => {
    let rows: IndexRowsCondition | undefined;
    ctx.onRows = (found) => {
      if (found.depth === 0) rows = found;
    };
    const sql = compileParameter(name, value, [type], 'r', ctx);
    return { sql, rows: sql.startsWith('EXISTS (') ? rows : undefined };
  });
  const dateRange = countDateRange(filters, compiled, inScope);
  if (dateRange) return dateRange;
  const driver =
    compiled.find((c) => c.rows && (c.rows.table === 'token_index' || c.rows.table === 'reference_index')) ?? compiled.find((c) => c.rows);
  if (!driver?.rows) return undefined;
  const others = compiled.filter((c) => c !== driver).map((c) => c.sql);
  const matching = indexRowsSource(driver.rows, inScope(driver.rows.alias, driver.rows.table));
  const sql =
    `SELECT count(*)::int AS n FROM (SELECT DISTINCT r."resourceType", r.id FROM (${matching}) r` +
    `${others.length > 0 ? ` WHERE ${others.join(' AND ')}` : ''}) c`;
  return sql;
}

/**
 * Every projectId present in an index table, one index probe each (a loose index scan: the
 * table's search indexes lead with projectId). A super admin's count and page name them all so
 * that those indexes serve them; without a projectId PostgreSQL can only scan the whole table.
 */
function everyProject(table: string): string {
  return (
    `ARRAY(WITH RECURSIVE p(id) AS (SELECT min("projectId") FROM ${table} UNION ALL` +
    ` SELECT (SELECT min(t."projectId") FROM ${table} t WHERE t."projectId" > p.id) FROM p WHERE p.id IS NOT NULL)` +
    ` SELECT id FROM p WHERE id IS NOT NULL)`
  );
}

/**
 * The count of a search holding `p=ge<A>&p=le<B>` (gt, lt alike) on a date parameter, such as a
 * measure's period. Resources with at most one row of `p` match when that row meets both bounds;
 * the others have a row with seq > 1 (conditions.ts, dateRangeCondition) and match when some
 * row meets each bound. So the count is: rows meeting both bounds, minus those of resources with
 * a row with seq > 1, plus the resources with a row with seq > 1 that match; the search's other
 * parameters are conditions on each. The first term is an index-only range scan that needs no
 * de-duplication (one row per resource); the others read only rows with seq > 1.
 */
function countDateRange(
  filters: readonly [string, string][],
  compiled: { sql: string; rows?: IndexRowsCondition }[],
  inScope: (alias: string, table: string) => string,
): string | undefined {
  const bound = (kind: 'lower' | 'upper', name?: string): number =>
    filters.findIndex(([n, value], i) => (name === undefined || n === name) && dateBoundKind(value) === kind && compiled[i].rows?.table === 'date_index');
  const low = bound('lower');
  if (low < 0) return undefined;
  const high = bound('upper', filters[low][0]);
  if (high < 0) return undefined;
  const first = compiled[low].rows!;
  const second = compiled[high].rows!;
  if (!first.condition || !second.condition) return undefined;
  const others = compiled.filter((_, i) => i !== low && i !== high).map((c) => c.sql);
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

// _include and _revinclude ------------------------------------------------------------------------

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

async function includes(
  services: SearchServices,
  scope: Scope,
  params: readonly [string, string][],
  matches: SearchRow[],
  tolerate: <T>(work: () => T) => T | undefined,
): Promise<SearchRow[]> {
  const specs = tolerate(() => parseIncludes(params, services.parameters)) ?? [];
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
      `i."resourceId" IN (SELECT json_array_elements_text(${args.add(JSON.stringify(ids))}::json))`,
      `i.code = ${args.add(spec.code)}`,
      'NOT r.deleted',
    ];
    if (spec.targetType) conditions.push(`i."targetType" = ${args.add(spec.targetType)}`);
    const scoped = scopeSql('r', 'projectId', scope, args);
    if (scoped) conditions.push(scoped);
    const raw = await db.query<RawRow>(
      `SELECT ${COLUMNS} FROM reference_index i JOIN resource r ON r."resourceType" = i."targetType" AND r.id = i."targetId"
       WHERE ${conditions.join(' AND ')}`,
      args.values,
    );
    return raw.map(toRow);
  }
  const targets = spec.targetType ? sources.filter((row) => row.resourceType === spec.targetType) : sources;
  if (targets.length === 0) return [];
  const byType = new Map<string, string[]>();
  for (const row of targets) byType.set(row.resourceType, [...(byType.get(row.resourceType) ?? []), row.id]);
  const alternatives = [...byType].map(
    ([type, ids]) =>
      `(i."targetType" = ${args.add(type)} AND i."targetId" IN (SELECT json_array_elements_text(${args.add(JSON.stringify(ids))}::json)))`,
  );
  const conditions = [`i."resourceType" = ${args.add(spec.sourceType)}`, `i.code = ${args.add(spec.code)}`, `(${alternatives.join(' OR ')})`, 'NOT r.deleted'];
  const scopedIndex = scopeSql('i', 'projectId', scope, args);
  if (scopedIndex) conditions.push(scopedIndex);
  const raw = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM reference_index i JOIN resource r ON r."resourceType" = i."resourceType" AND r.id = i."resourceId"
     WHERE ${conditions.join(' AND ')} LIMIT ${MAX_INCLUDED + 1}`,
    args.values,
  );
  return raw.map(toRow);
}

/** The caller's AccessPolicy criteria for `type` as one SQL condition on alias `r`, if any. */
function policyCondition(identity: Identity, type: string, ctx: CompileContext): string | undefined {
  const criteria = policyCriteria(identity, type);
  if (!criteria) return undefined;
  return criteria.map(([name, value]) => compileParameter(name, value, [type], 'r', ctx)).join(' AND ');
}

/**
 * Included resources pass the same AccessPolicy as matches: types the policy does not list are
 * dropped, and a type with criteria keeps only the resources that meet them.
 */
async function restrictToPolicy(
  services: SearchServices,
  scope: Scope,
  rows: SearchRow[],
  valueSets: CompileContext['valueSets'],
): Promise<SearchRow[]> {
  const identity = services.identity;
  if (!identity.accessPolicy || identity.superAdmin || rows.length === 0) return rows;
  const allowed = rows.filter((row) => policyAllowsType(identity, row.resourceType));
  const kept = new Set<string>();
  // Included types can have criteria with `:in` that the search's own types did not need.
  const more = await expandValueSets(services, scope, [...new Set(allowed.map((row) => row.resourceType))], [], [], valueSets);
  if (more) valueSets = new Map([...(valueSets ?? []), ...more]);
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
    });
    if (!condition) {
      for (const id of ids) kept.add(`${type}/${id}`);
      continue;
    }
    const matching = await services.db.query<{ id: string }>(
      `SELECT r.id FROM resource r WHERE r."resourceType" = ${args.add(type)}
       AND r.id IN (SELECT json_array_elements_text(${args.add(JSON.stringify(ids))}::json)) AND ${condition}`,
      args.values,
    );
    for (const row of matching) kept.add(`${type}/${row.id}`);
  }
  return allowed.filter((row) => kept.has(`${row.resourceType}/${row.id}`));
}

/** Every stored resource type, for a system search without `_type`. */
export function allResourceTypes(): readonly string[] {
  return getResourceTypes();
}

/** A warning issue, for transports that report ignored parameters themselves. */
export function warning(text: string, expression?: string): OperationOutcomeIssue {
  return { ...issue('invalid', text, expression), severity: 'warning' };
}
