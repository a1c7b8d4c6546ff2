import { getSearchParametersFor, isResourceType, type SearchParameter } from '../../fhir/definitions.js';
import { errors, issue, OperationOutcomeError, outcome } from '../../fhir/outcome.js';
import { MAX_COMPONENTS } from '../../indexing/row-types.js';
import { findCompositePlan, type CompositePlan } from '../../indexing/composite.js';
import { IDENTIFIER_SUFFIX, isIndexedType } from '../../indexing/add-rows.js';
import { parseReference } from '../../indexing/references.js';
import { capUtf8, MAX_INDEXED_SYSTEM_BYTES, MAX_INDEXED_VALUE_BYTES, normalise, normaliseForIndex } from '../../indexing/text.js';
import type { ProjectParameters } from '../../indexing/parameters.js';
import { likeEscape, scopeSql, type Scope, type SqlArgs } from './sql-builder.js';
import { parseDateValue, parseNumberValue, splitComponents, splitOr, splitPipe, takePrefix, unescape, type Prefix } from './values.js';

/**
 * Turns one search parameter (name with modifiers, chains or `_has`, and its comma-separated
 * values) into a SQL condition on a resource alias. The condition is an EXISTS over the index
 * table of the parameter's kind, keyed like the table's search index: (projectId, resourceType,
 * code, value...). Values are normalised and capped exactly as the indexer stores them.
 */

export interface CompileContext {
  args: SqlArgs;
  scope: Scope;
  /** The server's FHIR base, to read absolute references to this server as local ones. */
  fhirBase: string;
  /** Nesting depth of chains and `_has`, for unique aliases and a limit. */
  depth: number;
  /**
   * Expansions of the value sets named by `:in`/`:not-in`, by the URL as written (service.ts
   * expands them once per search), or the error that expanding gave.
   */
  valueSets?: ReadonlyMap<string, readonly ValueSetMember[] | OperationOutcomeError>;
  /** Set during the discovery pass: URLs of value sets the search needs, collected instead of compiled. */
  wantedValueSets?: Set<string>;
  /** The SearchParameters of the searching project (src/search/parameters.ts), beside the built-in ones. */
  parameters?: ProjectParameters;
  /**
   * Told of every "some index row matches" condition built (service.ts counts from the index
   * tables with it). A condition at depth 0 whose SQL starts with EXISTS is exactly that test.
   */
  onRows?: (rows: IndexRowsCondition) => void;
}

/** `EXISTS (row of table with code and condition)`, the shape of a plain parameter's condition. */
export interface IndexRowsCondition {
  table: string;
  /** The placeholder holding the parameter's code. */
  codeArg: string;
  /** The condition on the row, over the columns of `alias`. */
  condition: string | undefined;
  alias: string;
  depth: number;
}

/** One code of a value set expansion. */
export interface ValueSetMember {
  system: string;
  code: string;
}

const MAX_CHAIN_DEPTH = 4;

const TABLE_BY_TYPE: Partial<Record<SearchParameter['type'], string>> = {
  string: 'string_index',
  token: 'token_index',
  date: 'date_index',
  number: 'number_index',
  quantity: 'quantity_index',
  reference: 'reference_index',
  uri: 'uri_index',
  composite: 'composite_index',
};

/**
 * Search features of FHIR that this server does not offer, refused with a 400 `not-supported`
 * (or a warning under lenient handling) that says so, rather than as unknown parameters.
 */
const UNSUPPORTED_PARAMETERS = new Map<string, string>([
  ['_filter', '_filter (the FHIR filter expression language) is not supported: use search parameters, chains and _has'],
  ['_text', '_text (search on the narrative) is not supported: no full-text index is kept'],
  ['_content', '_content (full-text search on the whole resource) is not supported: no full-text index is kept'],
  ['_list', '_list is not supported: search the List and _include=List:item instead'],
  ['_query', '_query (named queries) is not supported'],
  ['_contained', '_contained is not supported: contained resources are not indexed'],
  ['_containedType', '_containedType is not supported: contained resources are not indexed'],
]);

/** Modifiers FHIR R4 defines (or a resource type, for references): others are reported as unknown. */
const KNOWN_MODIFIERS = new Set(['missing', 'exact', 'contains', 'text', 'not', 'above', 'below', 'in', 'not-in', 'of-type', 'identifier']);

/** 400 `not-supported`: a known FHIR feature this server does not offer. */
export function notSupported(text: string, expression: string): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue('not-supported', text, expression)]), 400);
}

function unsupportedModifier(name: string, modifier: string, kind: string): OperationOutcomeError {
  const code = name.split(':')[0];
  const text = KNOWN_MODIFIERS.has(modifier) || isResourceType(modifier)
    ? `Modifier :${modifier} is not supported on ${kind} parameter ${code}`
    : `Unknown modifier :${modifier} on ${kind} parameter ${code}`;
  return errors.invalid(text, name);
}

/**
 * The definition of a parameter on every one of `types` (same kind everywhere), or a 400: a
 * built-in one, or one of the searching project's own (`parameters`).
 */
export function findParameter(code: string, types: readonly string[], name = code, parameters?: ProjectParameters): SearchParameter {
  let found: SearchParameter | undefined;
  for (const type of types) {
    const param = getSearchParametersFor(type).find((p) => p.code === code) ?? parameters?.find(type, code);
    if (!param) {
      throw errors.invalid(`Unknown search parameter "${name}" for ${type}`, name);
    }
    if (found && found.type !== param.type) {
      throw errors.invalid(`Search parameter "${name}" has different types on ${types.join(', ')}`, name);
    }
    found ??= param;
  }
  if (!found) throw errors.invalid(`Unknown search parameter "${name}"`, name);
  return found;
}

/** Parameters whose token values are identifiers: a value names one resource, or a few. */
const KEY_TOKEN_CODES = new Set(['identifier']);

/**
 * Whether `name=value` selects by a key (ids, references to given resources, identifiers, or a
 * chain ending in one): it matches a handful of resources whatever the value, so the plan that
 * starts from it is the best plan for every value (QueryOptions.planOnce). Invalid parameters are
 * not keys (compiling them reports the error).
 */
export function selectsByKey(name: string, value: string, types: readonly string[], parameters?: ProjectParameters): boolean {
  if (name.startsWith('_has:')) return false;
  const values = splitOr(value);
  if (values.some((v) => v === '')) return false;
  const dot = name.indexOf('.');
  if (dot > 0) {
    const rest = name.slice(dot + 1);
    return rest === '_id' || (KEY_TOKEN_CODES.has(rest) && values.every(namesTokenCode));
  }
  const [code, modifier, ...more] = name.split(':');
  if (more.length > 0) return false;
  if (code === '_id') return modifier === undefined;
  let param: SearchParameter;
  try {
    param = findParameter(code, types, name, parameters);
  } catch {
    return false;
  }
  if (param.type === 'reference') {
    if (modifier === 'identifier') return values.every(namesTokenCode);
    return modifier === undefined || isResourceType(modifier);
  }
  return param.type === 'token' && modifier === undefined && KEY_TOKEN_CODES.has(code) && values.every(namesTokenCode);
}

/**
 * A string parameter's default (prefix) match on one value, as the range of index values it
 * covers: `lower` <= value < `upper` in byte order (text_pattern_ops). Such a match can be read
 * from its index in order (service.ts, orderedMatchesPage).
 */
export interface PrefixRange {
  code: string;
  lower: string;
  upper: string;
}

/** The PrefixRange of `name=value`, or undefined when it is not a plain one-value string prefix. */
export function stringPrefixRange(name: string, value: string, types: readonly string[], parameters?: ProjectParameters): PrefixRange | undefined {
  if (name.startsWith('_') || name.includes(':') || name.includes('.')) return undefined;
  const values = splitOr(value);
  if (values.length !== 1) return undefined;
  let param: SearchParameter;
  try {
    param = findParameter(name, types, name, parameters);
  } catch {
    return undefined;
  }
  if (param.type !== 'string' || !isSearchable(param)) return undefined;
  const lower = normaliseForIndex(unescape(values[0]));
  const upper = lower === '' ? undefined : prefixUpperBound(lower);
  return upper === undefined ? undefined : { code: name, lower, upper };
}

/**
 * The resources of one project and type matching a PrefixRange, each once with its first
 * matching value (`first`, byte order), ordered by it, then id: the order of the string index
 * (`value text_pattern_ops`, then "resourceId"), so that with `window` (rows of the index read,
 * in that order) the match stops early and is still the beginning of the whole match (a
 * resource is among the first rows when its first matching row is). The bounds are arguments of
 * the statement, so its plan is the same for every prefix.
 */
export function stringPrefixMatches(range: PrefixRange, type: string, projectId: string, ctx: CompileContext, window?: number): string {
  const { args } = ctx;
  const inOrder = window === undefined ? '' : ` ORDER BY w.value USING ~<~, w."resourceId" LIMIT ${args.add(window)}`;
  const rows =
    `SELECT w."resourceId", w.value FROM string_index w WHERE ${rowsOfCode(projectId, type, range.code, ctx)}` +
    ` AND w.value ~>=~ ${args.add(range.lower)} AND w.value ~<~ ${args.add(range.upper)}${inOrder}`;
  // min under "C" is text_pattern_ops' byte order. Ordered here, before the page's join to the
  // resources, so that the join keeps this order and stops at the page.
  return firstOfEach(rows, 'min(m.value COLLATE "C")', true);
}

/**
 * Whether `name=value` is a token parameter's plain match on one code (`code`, `|code` or
 * `system|code`, no modifier): rows its index lists by system, then resource (tokenCodeMatches).
 */
export function isTokenCodeMatch(name: string, value: string, types: readonly string[], parameters?: ProjectParameters): boolean {
  if (name.startsWith('_') || name.includes(':') || name.includes('.')) return false;
  const values = splitOr(value);
  if (values.length !== 1 || !namesTokenCode(values[0])) return false;
  try {
    const param = findParameter(name, types, name, parameters);
    return param.type === 'token' && isSearchable(param);
  } catch {
    return false;
  }
}

/**
 * The resources of one project and type matching a token code (isTokenCodeMatch), each once with
 * its first matching system (`first`), ordered by it, then id: the order of the token index
 * (projectId, resourceType, code, value, system, resourceId), so that with `window` (rows of the
 * index read, in that order) the match stops early and is the beginning of the whole match, as
 * stringPrefixMatches does for a prefix. A value without a system sorts last, as in the index.
 */
export function tokenCodeMatches(name: string, value: string, type: string, projectId: string, ctx: CompileContext, window?: number): string {
  const inOrder = window === undefined ? '' : ` ORDER BY w.system, w."resourceId" LIMIT ${ctx.args.add(window)}`;
  const rows = `SELECT w."resourceId", w.system FROM token_index w WHERE ${tokenCodeRows(name, value, type, projectId, ctx)}${inOrder}`;
  return firstOfEach(rows, 'min(m.system)', true);
}

/** How many index rows a token code has, counting no further than `limit` (whether a window of that many holds them all). */
export function tokenCodeRowCount(name: string, value: string, type: string, projectId: string, ctx: CompileContext, limit: number): string {
  return `SELECT count(*)::int AS n FROM (SELECT 1 FROM token_index w WHERE ${tokenCodeRows(name, value, type, projectId, ctx)} LIMIT ${ctx.args.add(limit)}) c`;
}

function tokenCodeRows(name: string, value: string, type: string, projectId: string, ctx: CompileContext): string {
  return `${rowsOfCode(projectId, type, name, ctx)} AND ${tokenCondition(name, undefined, value, tokenColumns('w'), ctx)}`;
}

/** The rows `w` of an index table that belong to one project, type and parameter code (the leading columns of its indexes). */
function rowsOfCode(projectId: string, type: string, code: string, ctx: CompileContext): string {
  return `w."projectId" = ${ctx.args.add(projectId)} AND w."resourceType" = ${ctx.args.add(type)} AND w.code = ${ctx.args.add(code)}`;
}

/**
 * Each resource of `rows` (columns "resourceId" and the aggregated ones, as `m`) once, with
 * `aggregate` as `first`; `ordered`: by it, then id.
 */
function firstOfEach(rows: string, aggregate: string, ordered: boolean): string {
  return `SELECT m."resourceId", ${aggregate} AS first FROM (${rows}) m GROUP BY m."resourceId"${ordered ? ' ORDER BY first, m."resourceId"' : ''}`;
}

/**
 * The resources of one project and type with rows of the date parameter `code`, each once with
 * its sort value (`first`: the least COALESCE(start, end), or for a descending sort the greatest
 * COALESCE(end, start), as sortExpression in service.ts has it), in the order of the page:
 * that value, then id. The rows are read in that order from the index of migration 0015, so with
 * `window` the read stops early and is still the beginning of the whole order (a resource's first
 * row there holds its value).
 */
export function dateSortMatches(code: string, descending: boolean, type: string, projectId: string, ctx: CompileContext, window: number): string {
  const value = descending ? 'COALESCE(w."end", w.start)' : 'COALESCE(w.start, w."end")';
  const direction = descending ? 'DESC' : 'ASC';
  const rows =
    `SELECT w."resourceId", ${value} AS v FROM date_index w WHERE ${rowsOfCode(projectId, type, code, ctx)}` +
    ` AND ${value} IS NOT NULL ORDER BY ${value} ${direction}, w."resourceId" LIMIT ${ctx.args.add(window)}`;
  return firstOfEach(rows, `${descending ? 'max' : 'min'}(m.v)`, false);
}

/**
 * The resources of one project and type with rows of the string parameter `code`, each once with
 * its sort value (`first`: its least value, or for a descending sort its greatest, in byte order
 * as sortExpression in service.ts compares them), read from the string index in that order
 * (`value text_pattern_ops`, then "resourceId") with a `window` of rows. Ascending, that is the
 * page's order (value, then id). Descending, the index gives ids descending within a value while
 * the page breaks ties by id ascending, so the resources of the window's last value, which may
 * have more rows beyond it, are left out: the rest are the beginning of the whole order.
 */
export function stringSortMatches(code: string, descending: boolean, type: string, projectId: string, ctx: CompileContext, window: number): string {
  const order = descending ? 'w.value USING ~>~, w."resourceId" DESC' : 'w.value USING ~<~, w."resourceId"';
  const rows =
    `SELECT w."resourceId", w.value COLLATE "C" AS v FROM string_index w WHERE ${rowsOfCode(projectId, type, code, ctx)}` +
    ` ORDER BY ${order} LIMIT ${ctx.args.add(window)}`;
  if (!descending) return firstOfEach(rows, 'min(m.v)', false);
  return (
    `SELECT q."resourceId", q.first FROM (SELECT m."resourceId", max(m.v) AS first, min(min(m.v)) OVER () AS last` +
    ` FROM (${rows}) m GROUP BY m."resourceId") q WHERE q.first > q.last`
  );
}

/**
 * The index table of `name=value` when it is a number or quantity parameter's comparison with one
 * value that reads a range of the index's values (any prefix but `ne`), else undefined
 * (numericRangeMatches).
 */
export function numericRangeTable(name: string, value: string, types: readonly string[], parameters?: ProjectParameters): 'number_index' | 'quantity_index' | undefined {
  if (name.startsWith('_') || name.includes(':') || name.includes('.')) return undefined;
  const values = splitOr(value);
  if (values.length !== 1 || values[0].startsWith('ne')) return undefined;
  try {
    const param = findParameter(name, types, name, parameters);
    if (!isSearchable(param)) return undefined;
    return param.type === 'number' ? 'number_index' : param.type === 'quantity' ? 'quantity_index' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The resources of one project and type matching a number or quantity comparison
 * (numericRangeTable), each once with its least matching value (`first`), ordered by it, then id:
 * the order of the index (projectId, resourceType, code, value), so that with `window` the match
 * stops early and is the beginning of the whole match, as tokenCodeMatches does for a code. Only
 * where no row of the parameter in the project holds a Range (numericRangesExist): a Range's high
 * would match values the range scan of `value` does not reach.
 */
export function numericRangeMatches(
  table: 'number_index' | 'quantity_index',
  name: string,
  value: string,
  type: string,
  projectId: string,
  ctx: CompileContext,
  window?: number,
): string {
  const condition =
    table === 'number_index' ? numberCondition(name, value, 'w.value', ctx) : quantityCondition(name, value, { ...quantityColumns('w'), high: undefined }, ctx);
  const inOrder = window === undefined ? '' : ` ORDER BY w.value, w."resourceId" LIMIT ${ctx.args.add(window)}`;
  const rows =
    `SELECT w."resourceId", w.value FROM ${table} w WHERE ${rowsOfCode(projectId, type, name, ctx)} AND ${condition}${inOrder}`;
  return firstOfEach(rows, 'min(m.value)', true);
}

/** Whether some row of a number or quantity parameter in the project holds a Range (a partial index on the highs answers). */
export function numericRangesExist(table: 'number_index' | 'quantity_index', name: string, type: string, projectId: string, ctx: CompileContext): string {
  return (
    `SELECT EXISTS (SELECT 1 FROM ${table} w WHERE ${rowsOfCode(projectId, type, name, ctx)} AND w.high IS NOT NULL) AS ranged`
  );
}

/**
 * The least string above every string starting with `prefix`, in code point order (which is
 * UTF-8 byte order, text_pattern_ops' order): the prefix with its last code point incremented.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) return String.fromCodePoint(...points, last === 0xd7ff ? 0xe000 : last + 1);
  }
  return undefined;
}

/** A token value with a code (`code` or `system|code`), not a whole system (`system|`). */
function namesTokenCode(raw: string): boolean {
  const parts = splitPipe(raw);
  return parts[parts.length - 1] !== '';
}

/** Whether a parameter can be searched (indexed kinds plus the resource columns); composites: findCompositePlan. */
export function isSearchable(param: SearchParameter): boolean {
  return param.code === '_id' || param.code === '_lastUpdated' || (param.expression !== undefined && isIndexedType(param.type));
}

/** The parameters of a type that search answers (for the CapabilityStatement). */
export function searchableParameters(resourceType: string): SearchParameter[] {
  return getSearchParametersFor(resourceType).filter(
    (param) => isSearchable(param) || (param.type === 'composite' && findCompositePlan(resourceType, param.code) !== undefined),
  );
}

/**
 * SQL for `name=value` on `alias`, whose resource type is one of `types`. `name` may carry a
 * modifier (`name:exact`), a chain (`subject:Patient.name`) or be a `_has` (`_has:Observation:patient:code`).
 */
export function compileParameter(
  name: string,
  value: string,
  types: readonly string[],
  alias: string,
  ctx: CompileContext,
): string {
  if (name.startsWith('_has:')) return compileHas(name, value, types, alias, ctx);
  const dot = name.indexOf('.');
  if (dot > 0) return compileChain(name, dot, value, types, alias, ctx);
  const colon = name.indexOf(':');
  const code = colon < 0 ? name : name.slice(0, colon);
  const modifier = colon < 0 ? undefined : name.slice(colon + 1);
  if (code === '_id') return compileId(name, modifier, value, alias, ctx);
  if (code === '_lastUpdated') return compileLastUpdated(name, modifier, value, alias, ctx);
  if (code === '_project') {
    if (modifier) throw errors.invalid(`Modifier :${modifier} is not supported on _project`, name);
    const ids = splitOr(value).map(unescape);
    return `${alias}."projectId" IN (${ids.map((id) => ctx.args.add(id)).join(', ')})`;
  }
  const unsupported = UNSUPPORTED_PARAMETERS.get(code);
  if (unsupported) throw notSupported(unsupported, name);
  const param = findParameter(code, types, name, ctx.parameters);
  if (param.type === 'composite') return compileComposite(name, code, modifier, value, types, alias, ctx);
  if (!isSearchable(param)) {
    const why = param.type === 'special' ? ' (special parameters such as near need their own index)' : '';
    throw notSupported(`Search parameter "${code}" (${param.type}) is not supported by this server${why}`, name);
  }
  if (modifier === 'identifier') {
    if (param.type !== 'reference') throw unsupportedModifier(name, modifier, param.type);
    return compileReferenceIdentifier(name, code, value, alias, ctx);
  }
  const table = TABLE_BY_TYPE[param.type]!;
  const codeArg = ctx.args.add(code);
  const x = `x${ctx.depth}`;
  const rowsOf = (condition: string | undefined): string => {
    ctx.onRows?.({ table, codeArg, condition, alias: x, depth: ctx.depth });
    return (
      `EXISTS (SELECT 1 FROM ${table} ${x} WHERE ${x}."projectId" = ${alias}."projectId" AND ${x}."resourceType" = ${alias}."resourceType"` +
      ` AND ${x}."resourceId" = ${alias}.id AND ${x}.code = ${codeArg}${condition ? ` AND (${condition})` : ''})`
    );
  };

  if (modifier === 'missing') {
    if (value !== 'true' && value !== 'false') {
      throw errors.invalid(`${name} must be true or false, not "${value}"`, name);
    }
    return value === 'true' ? `NOT ${rowsOf(undefined)}` : rowsOf(undefined);
  }
  const values = splitOr(value);
  if (values.some((v) => v === '') && param.type !== 'token') {
    throw errors.invalid(`Empty value in search parameter ${name}`, name);
  }
  switch (param.type) {
    case 'string':
      return rowsOf(orJoin(values.map((v) => stringCondition(name, modifier, unescape(v), x, ctx))));
    case 'token': {
      // `:not` and `:not-in` also find resources without any value (search.html, token `:not`).
      if (modifier === 'not') {
        return `NOT ${rowsOf(orJoin(values.map((v) => tokenCondition(name, undefined, v, tokenColumns(x), ctx))))}`;
      }
      if (modifier === 'not-in') {
        return `NOT ${rowsOf(orJoin(values.map((v) => tokenCondition(name, 'in', v, tokenColumns(x), ctx))))}`;
      }
      return rowsOf(orJoin(values.map((v) => tokenCondition(name, modifier, v, tokenColumns(x), ctx))));
    }
    case 'date':
      noModifier(name, modifier, 'date');
      return rowsOf(orJoin(values.map((v) => dateCondition(name, v, `${x}.start`, `${x}."end"`, ctx))));
    case 'number':
      noModifier(name, modifier, 'number');
      return rowsOf(orJoin(values.map((v) => numberCondition(name, v, `${x}.value`, ctx, `${x}.high`))));
    case 'quantity':
      noModifier(name, modifier, 'quantity');
      return rowsOf(orJoin(values.map((v) => quantityCondition(name, v, quantityColumns(x), ctx))));
    case 'reference':
      return rowsOf(orJoin(values.map((v) => referenceCondition(name, modifier, unescape(v), referenceColumns(x), ctx))));
    case 'uri':
      return rowsOf(orJoin(values.map((v) => uriCondition(name, modifier, unescape(v), `${x}.value`, ctx))));
    default:
      throw errors.invalid(`Search parameter "${name}" (${param.type}) is not supported by this server`, name);
  }
}

function orJoin(conditions: string[]): string {
  return conditions.length === 1 ? conditions[0] : `(${conditions.join(') OR (')})`;
}

function noModifier(name: string, modifier: string | undefined, kind: string): void {
  if (modifier !== undefined) throw unsupportedModifier(name, modifier, kind);
}

/** EXISTS over the rows of `table` with `code` that belong to the resource `alias`. */
function existsRows(table: string, code: string, alias: string, ctx: CompileContext, condition: string | undefined): string {
  const x = `x${ctx.depth}`;
  return (
    `EXISTS (SELECT 1 FROM ${table} ${x} WHERE ${x}."projectId" = ${alias}."projectId" AND ${x}."resourceType" = ${alias}."resourceType"` +
    ` AND ${x}."resourceId" = ${alias}.id AND ${x}.code = ${ctx.args.add(code)}${condition ? ` AND (${condition})` : ''})`
  );
}

// reference :identifier ---------------------------------------------------------------------------

/**
 * `subject:identifier=system|value`: a Reference whose `identifier` matches, as a token. The
 * indexer stores Reference.identifier as token rows under the code `subject:identifier`.
 */
function compileReferenceIdentifier(name: string, code: string, value: string, alias: string, ctx: CompileContext): string {
  const x = `x${ctx.depth}`;
  const values = splitOr(value);
  if (values.some((v) => v === '')) throw errors.invalid(`Empty value in search parameter ${name}`, name);
  return existsRows('token_index', `${code}${IDENTIFIER_SUFFIX}`, alias, ctx, orJoin(values.map((v) => tokenCondition(name, undefined, v, tokenColumns(x), ctx))));
}

// composite ---------------------------------------------------------------------------------------

/**
 * `code-value-quantity=http://loinc.org|8480-6$gt100`: components separated by `$`, each matched by
 * its own kind's rules, all in one row of composite_index (one element of the resource). Commas
 * separate alternatives, as everywhere. No modifiers but `:missing`.
 */
function compileComposite(
  name: string,
  code: string,
  modifier: string | undefined,
  value: string,
  types: readonly string[],
  alias: string,
  ctx: CompileContext,
): string {
  const plans: CompositePlan[] = [];
  for (const type of types) {
    const plan = findCompositePlan(type, code);
    if (!plan) throw notSupported(`Composite search parameter "${code}" is not supported on ${type}: its definition cannot be indexed`, name);
    plans.push(plan);
  }
  const kinds = plans[0].components.map((component) => component.type);
  if (plans.some((plan) => plan.components.map((component) => component.type).join() !== kinds.join())) {
    throw errors.invalid(`Composite search parameter "${code}" has different components on ${types.join(', ')}`, name);
  }
  if (modifier === 'missing') {
    if (value !== 'true' && value !== 'false') throw errors.invalid(`${name} must be true or false, not "${value}"`, name);
    const rows = existsRows('composite_index', code, alias, ctx, undefined);
    return value === 'true' ? `NOT ${rows}` : rows;
  }
  if (modifier !== undefined) throw unsupportedModifier(name, modifier, 'composite');
  const x = `x${ctx.depth}`;
  const usage = plans[0].components.map((component) => component.code).join('$');
  const alternatives = splitOr(value).map((alternative) => {
    const parts = splitComponents(alternative);
    if (parts.length !== kinds.length) {
      throw errors.invalid(
        `Invalid value "${alternative}" for composite parameter ${code}: give ${kinds.length} components separated by $ (${usage})`,
        name,
      );
    }
    return parts
      .map((part, index) => {
        if (part === '') throw errors.invalid(`Empty component ${index + 1} (${plans[0].components[index].code}) in ${name}`, name);
        return `(${componentCondition(name, kinds[index], part, index + 1, x, ctx)})`;
      })
      .join(' AND ');
  });
  return existsRows('composite_index', code, alias, ctx, orJoin(alternatives));
}

/** One component's condition on the columns of its position `n` (index-rows.ts, CompositeRow). */
function componentCondition(name: string, kind: SearchParameter['type'], raw: string, n: number, x: string, ctx: CompileContext): string {
  if (n > MAX_COMPONENTS) throw errors.invalid(`Too many components in ${name}`, name);
  const column = (prefix: string): string => `${x}."${prefix}${n}"`;
  switch (kind) {
    case 'token':
      return tokenCondition(name, undefined, raw, { system: column('system'), value: column('value') }, ctx);
    case 'quantity':
      // A Range keeps its high in `high` (index-rows.ts, CompositeRow); a Quantity leaves it null.
      return quantityCondition(name, raw, { value: column('number'), high: column('high'), system: column('system'), unit: column('value') }, ctx);
    case 'number':
      return numberCondition(name, raw, column('number'), ctx, column('high'));
    case 'date':
      return dateCondition(name, raw, column('start'), column('end'), ctx);
    case 'string': {
      const text = normaliseForIndex(unescape(raw));
      return `${column('value')} LIKE ${ctx.args.add(`${likeEscape(text)}%`)}`;
    }
    case 'reference':
      return referenceCondition(name, undefined, unescape(raw), { targetType: column('system'), targetId: column('value'), url: column('value') }, ctx);
    case 'uri':
      return uriCondition(name, undefined, unescape(raw), column('value'), ctx);
    default:
      throw notSupported(`Composite parameter ${name} has a ${kind} component, which is not supported`, name);
  }
}

// string ------------------------------------------------------------------------------------------

function stringCondition(name: string, modifier: string | undefined, value: string, x: string, ctx: CompileContext): string {
  const normalised = normaliseForIndex(value);
  switch (modifier) {
    case undefined:
      return `${x}.value LIKE ${ctx.args.add(`${likeEscape(normalised)}%`)}`;
    case 'exact':
      return `${x}.value = ${ctx.args.add(normalised)} AND ${x}.exact = ${ctx.args.add(value)}`;
    case 'contains':
      return `${x}.value LIKE ${ctx.args.add(`%${likeEscape(normalised)}%`)}`;
    default:
      throw unsupportedModifier(name, modifier, 'string');
  }
}

// token -------------------------------------------------------------------------------------------

/** Columns a token condition reads: token_index's own, or a composite row's component. */
interface TokenColumns {
  system: string;
  value: string;
  /** Absent where there is no display text (composite components): `:text` is refused. */
  text?: string;
}

function tokenColumns(x: string): TokenColumns {
  return { system: `${x}.system`, value: `${x}.value`, text: `${x}.text` };
}

function tokenCondition(name: string, modifier: string | undefined, raw: string, cols: TokenColumns, ctx: CompileContext): string {
  if (modifier === 'text' && cols.text) {
    const text = normalise(unescape(raw).trim());
    if (text === '') throw errors.invalid(`Empty value in search parameter ${name}`, name);
    const escaped = likeEscape(text);
    return `${cols.text} LIKE ${ctx.args.add(`${escaped}%`)} OR ${cols.text} LIKE ${ctx.args.add(`% ${escaped}%`)}`;
  }
  if (modifier === 'in') return valueSetCondition(name, unescape(raw), cols, ctx);
  if (modifier !== undefined) throw unsupportedModifier(name, modifier, 'token');
  const parts = splitPipe(raw);
  if (parts.length > 2) throw errors.invalid(`Invalid token "${raw}" for ${name}: use code, system|code, |code or system|`, name);
  const value = (text: string): string => ctx.args.add(capUtf8(unescape(text), MAX_INDEXED_VALUE_BYTES));
  const system = (text: string): string => ctx.args.add(capUtf8(unescape(text), MAX_INDEXED_SYSTEM_BYTES));
  if (parts.length === 1) {
    if (parts[0] === '') throw errors.invalid(`Empty value in search parameter ${name}`, name);
    return `${cols.value} = ${value(parts[0])}`;
  }
  const [sys, code] = parts;
  if (sys === '' && code === '') throw errors.invalid(`Invalid token "|" for ${name}`, name);
  if (sys === '') return `${cols.value} = ${value(code)} AND ${cols.system} IS NULL`;
  if (code === '') return `${cols.system} = ${system(sys)}`;
  return `${cols.value} = ${value(code)} AND ${cols.system} = ${system(sys)}`;
}

/**
 * `:in` (and, negated by the caller, `:not-in`): a coding whose system and code are in the
 * expansion of the ValueSet `url` (or a value without a system whose code is), expanded once per
 * search before compiling (service.ts, `expandValueSets`): the codes travel as two arrays, so the
 * index serves `value = ANY(...)`.
 */
function valueSetCondition(name: string, url: string, cols: TokenColumns, ctx: CompileContext): string {
  if (url === '') throw errors.invalid(`Empty value in search parameter ${name}: give a ValueSet's canonical URL`, name);
  const expansion = ctx.valueSets?.get(url);
  if (expansion === undefined) {
    // The discovery pass (service.ts) collects the value sets a search needs before they are expanded.
    if (ctx.wantedValueSets) {
      ctx.wantedValueSets.add(url);
      return 'false';
    }
    throw errors.invalid(`${name}: ValueSet ${url} could not be expanded here`, name);
  }
  if (expansion instanceof OperationOutcomeError) throw expansion;
  if (expansion.length === 0) return 'false';
  const codes = ctx.args.add(expansion.map((member) => capUtf8(member.code, MAX_INDEXED_VALUE_BYTES)), 'text[]');
  const systems = ctx.args.add(expansion.map((member) => capUtf8(member.system, MAX_INDEXED_SYSTEM_BYTES)), 'text[]');
  // A value without a system is a `code` element (Patient.gender), whose system is implied by its
  // binding: it matches by code alone. A coding with a system must match system and code.
  return (
    `${cols.value} = ANY(${codes}) AND (${cols.system} IS NULL OR (${cols.system}, ${cols.value}) IN ` +
    `(SELECT v.s, v.c FROM unnest(${systems}, ${codes}) AS v(s, c)))`
  );
}

// _id and _lastUpdated (columns of the resource table) -------------------------------------------

function compileId(name: string, modifier: string | undefined, value: string, alias: string, ctx: CompileContext): string {
  const ids = splitOr(value).map(unescape);
  if (ids.some((id) => id === '')) throw errors.invalid(`Empty value in search parameter ${name}`, name);
  const list = `${alias}.id IN (${ids.map((id) => ctx.args.add(id)).join(', ')})`;
  if (modifier === 'not') return `NOT (${list})`;
  noModifier(name, modifier, 'token');
  return list;
}

function compileLastUpdated(name: string, modifier: string | undefined, value: string, alias: string, ctx: CompileContext): string {
  noModifier(name, modifier, 'date');
  const column = `${alias}."lastUpdated"`;
  return orJoin(splitOr(value).map((v) => dateCondition(name, v, column, column, ctx)));
}

// date --------------------------------------------------------------------------------------------

/**
 * Date comparisons between the search range [qs, qe] and the stored range [start, end] (null =
 * open), as search.html defines each prefix.
 */
export function dateCondition(name: string, raw: string, start: string, end: string, ctx: CompileContext): string {
  const { prefix, range } = parseDateValue(name, raw);
  // Arguments are added only when used: PostgreSQL cannot type a parameter the SQL never mentions.
  const qs = (): string => ctx.args.add(range.start, 'timestamptz');
  const qe = (): string => ctx.args.add(range.end, 'timestamptz');
  const within = (): string => `(${start} >= ${qs()} AND ${end} <= ${qe()})`;
  // `eq`, `ge` and `le` also get a bound they imply on one column (start <= qe, end >= qs), so an
  // index on that column can serve them.
  switch (prefix) {
    case 'eq':
      return `${start} <= ${qe()} AND ${within()}`;
    case 'ne':
      return `NOT (COALESCE(${start} >= ${qs()} AND ${end} <= ${qe()}, false))`;
    case 'gt':
      return `(${end} > ${qe()} OR ${end} IS NULL)`;
    case 'lt':
      return `(${start} < ${qs()} OR ${start} IS NULL)`;
    case 'ge':
      return `(${end} >= ${qs()} OR ${end} IS NULL) AND (${end} > ${qe()} OR ${end} IS NULL OR ${within()})`;
    case 'le':
      return `(${start} <= ${qe()} OR ${start} IS NULL) AND (${start} < ${qs()} OR ${start} IS NULL OR ${within()})`;
    case 'sa':
      return `${start} > ${qe()}`;
    case 'eb':
      return `${end} < ${qs()}`;
    case 'ap': {
      // Within 10% of the distance between the value and now, at least a day, either side.
      const now = Date.now();
      const from = Date.parse(range.start);
      const to = Date.parse(range.end);
      const margin = Math.max(86_400_000, 0.1 * Math.max(Math.abs(now - from), Math.abs(now - to)));
      const lo = ctx.args.add(new Date(Math.max(from - margin, -62135596800000)).toISOString(), 'timestamptz');
      const hi = ctx.args.add(new Date(Math.min(to + margin, 253402300799999)).toISOString(), 'timestamptz');
      return `(COALESCE(${start} <= ${hi}, true) AND COALESCE(${end} >= ${lo}, true))`;
    }
  }
}

/**
 * The SQL expression of a date_index row's range, null bounds open, a reversed range (end before
 * start, which bad data can hold) turned round so the expression never fails. Spelled exactly as
 * the GiST index `date_index_range_idx` of migration 0006, so the planner matches it.
 */
export function dateRowRange(x: string): string {
  return `(CASE WHEN ${x}.start > ${x}."end" THEN tstzrange(${x}."end", ${x}.start, '[]') ELSE tstzrange(${x}.start, ${x}."end", '[]') END)`;
}

/** Whether a date parameter value bounds the matches from below (ge, gt) or from above (le, lt). */
export function dateBoundKind(raw: string): 'lower' | 'upper' | undefined {
  if (splitOr(raw).length !== 1) return undefined;
  const { prefix } = takePrefix(raw);
  if (prefix === 'ge' || prefix === 'gt') return 'lower';
  if (prefix === 'le' || prefix === 'lt') return 'upper';
  return undefined;
}

/**
 * A redundant condition for `name=ge<A>&name=le<B>` (gt/lt alike) that an index can serve; the
 * caller keeps both parameters' own conditions. Neither bound alone is selective (each half the
 * data), and FHIR lets each bound match a different value of the resource, so the two EXISTS
 * cannot simply be merged into one. This condition is
 *   resource IN (those with a row of the parameter that meets both bounds and overlaps [A, B]
 *                UNION ALL those with a row of it with seq > 1)
 * and it is implied by the two conditions, hence adds nothing to and removes nothing from the
 * result: a resource with at most one row of the parameter meets both bounds with that one row
 * (so the first branch holds), and a resource with two or more rows has one with seq > 1 (seq
 * numbers the rows of one resource in one table from 1, src/storage/sql.ts). Rows meeting both
 * bounds overlap [A, B] (the lower bound asks end >= A, the upper start <= B), which the GiST
 * index on the row range finds; the partial index on seq > 1 finds the rest (empty when the
 * parameter has one value per resource, the usual case). When A > B a row meets both only by
 * containing [B, A].
 */
export function dateRangeCondition(
  name: string,
  lower: string,
  upper: string,
  types: readonly string[],
  alias: string,
  ctx: CompileContext,
): string | undefined {
  const x = `x${ctx.depth}`;
  const meets = dateRowMeetsRange(name, lower, upper, types, x, ctx);
  if (!meets) return undefined;
  return `(${alias}."projectId", ${alias}."resourceType", ${alias}.id) IN (${dateRowsOf(x, types, ctx, meets, name)}` +
    ` UNION ALL ${dateRowsOf(x, types, ctx, `${x}.seq > 1`, name)})`;
}

/**
 * The condition on a date_index row `x` of `name` that it meets both bounds and overlaps [A, B]
 * (the GiST index's), or undefined when `lower`/`upper` are not such a pair on a date parameter.
 */
function dateRowMeetsRange(name: string, lower: string, upper: string, types: readonly string[], x: string, ctx: CompileContext): string | undefined {
  if (name.includes(':') || name.includes('.') || name.startsWith('_')) return undefined;
  if (dateBoundKind(lower) !== 'lower' || dateBoundKind(upper) !== 'upper') return undefined;
  const param = findParameter(name, types, name, ctx.parameters);
  if (param.type !== 'date' || !isSearchable(param)) return undefined;
  const low = parseDateValue(name, lower);
  const high = parseDateValue(name, upper);
  // The row's end must reach A, its start must not pass B (looser than gt/lt, as a hint may be).
  const a = low.prefix === 'ge' ? low.range.start : low.range.end;
  const b = high.prefix === 'le' ? high.range.end : high.range.start;
  const [aTime, bTime] = [Date.parse(a), Date.parse(b)];
  if (Number.isNaN(aTime) || Number.isNaN(bTime)) return undefined;
  const start = `${x}.start`;
  const end = `${x}."end"`;
  const both = `${dateCondition(name, lower, start, end, ctx)} AND ${dateCondition(name, upper, start, end, ctx)}`;
  const overlap =
    aTime <= bTime
      ? `${dateRowRange(x)} && tstzrange(${ctx.args.add(a, 'timestamptz')}, ${ctx.args.add(b, 'timestamptz')}, '[]')`
      : `${dateRowRange(x)} @> tstzrange(${ctx.args.add(b, 'timestamptz')}, ${ctx.args.add(a, 'timestamptz')}, '[]')`;
  return `${both} AND ${overlap}`;
}

/**
 * The resources matching `name=<lower>&name=<upper>` (dateRangeCondition's pair) in one project,
 * each once, as rows of "resourceId" that a page can be joined from without de-duplicating them
 * (service.ts, dateRangePage): a resource without a row of `name` with seq > 1 has at most one
 * row of it, so its rows that meet both bounds (found by the GiST index, in its order) are
 * distinct; the resources with such a row (the partial index on seq > 1; none when the parameter
 * has one value per resource) are listed once each when some row meets each bound, as FHIR says.
 * A page joined from these rows stops at its last row, where `IN` had PostgreSQL hash every match
 * first (550 rows for a day of 1,000,000 Observations). Undefined when the pair is not one.
 */
export function dateRangeRows(name: string, lower: string, upper: string, type: string, projectId: string, ctx: CompileContext): string | undefined {
  const meets = dateRowMeetsRange(name, lower, upper, [type], 'g', ctx);
  if (!meets) return undefined;
  const inProject = (x: string): string =>
    `${x}."projectId" = ${ctx.args.add(projectId)} AND ${x}."resourceType" = ${ctx.args.add(type)} AND ${x}.code = ${ctx.args.add(name)}`;
  const sameResource = (x: string, of: string): string =>
    `${x}."projectId" = ${of}."projectId" AND ${x}."resourceType" = ${of}."resourceType" AND ${x}.code = ${of}.code AND ${x}."resourceId" = ${of}."resourceId"`;
  const someRow = (raw: string): string =>
    `EXISTS (SELECT 1 FROM date_index x WHERE ${sameResource('x', 'l')} AND ${dateCondition(name, raw, 'x.start', 'x."end"', ctx)})`;
  const single =
    `SELECT g."resourceId" FROM date_index g WHERE ${inProject('g')} AND ${meets}` +
    ` AND NOT EXISTS (SELECT 1 FROM date_index l WHERE ${sameResource('l', 'g')} AND l.seq > 1)`;
  const several =
    `SELECT l."resourceId" FROM date_index l WHERE ${inProject('l')} AND l.seq > 1 AND ${someRow(lower)} AND ${someRow(upper)}` +
    ` GROUP BY l."resourceId"`;
  return `${single} UNION ALL ${several}`;
}

/**
 * The resources having a row of date parameter `code` that meets `condition`, uncorrelated so the
 * planner can drive the search from it: each branch is an index-only scan (the GiST index on the
 * row range includes the columns read, migration 0012; the partial index on seq > 1 likewise).
 */
function dateRowsOf(x: string, types: readonly string[], ctx: CompileContext, condition: string, code: string): string {
  const where = [
    scopeSql(x, 'projectId', ctx.scope, ctx.args),
    // Several types (a system search): the join on the resource's type filters them.
    types.length === 1 ? `${x}."resourceType" = ${ctx.args.add(types[0])}` : undefined,
    `${x}.code = ${ctx.args.add(code)}`,
    condition,
  ];
  return `SELECT ${x}."projectId", ${x}."resourceType", ${x}."resourceId" FROM date_index ${x} WHERE ${where.filter(Boolean).join(' AND ')}`;
}

// number and quantity -----------------------------------------------------------------------------

/** `high`: the nullable column of a Range's high (number_index.high, composite_index.highN). */
function numberCondition(name: string, raw: string, column: string, ctx: CompileContext, high?: string): string {
  const { prefix, value, halfUnit } = parseNumberValue(name, raw);
  return numberComparison(prefix, value, halfUnit, column, ctx, high);
}

/**
 * A number or quantity prefix against a stored value `low`, or against a stored range [low, high]
 * when the row has a `high` (a Range, search.html#prefix): `eq` needs the range inside the search
 * value's implicit range, `gt`/`ge` its high above the value, `lt`/`le` its low below, `sa`/`eb` the
 * whole range above/below, `ap` an overlap with the approximate range. A row without a high is the
 * range [low, low], which makes these the value comparisons.
 *
 * `high` is a nullable column (null: a plain value). Rows with one hold low <= high (rows.ts,
 * rangeBounds), so each condition can bound `low` itself: eq and eb add the bound `low <` that the
 * range form implies, gt, ge and ap are an OR of a test on `low` and one on `high`. An index on
 * `low` then serves a plain value's search as it did before Ranges were indexed, and the partial
 * index on `high` (quantity_index: migration 0011, number_index: 0013) the Range rows.
 */
function numberComparison(prefix: Prefix, value: number, halfUnit: number, low: string, ctx: CompileContext, high?: string): string {
  const v = (): string => ctx.args.add(value, 'float8');
  const upper = high === undefined ? low : `COALESCE(${high}, ${low})`;
  const lowBelow = (bound: string): string => (high === undefined ? '' : ` AND ${low} < ${bound}`);
  switch (prefix) {
    case 'eq': {
      const to = ctx.args.add(value + halfUnit, 'float8');
      return `${low} >= ${ctx.args.add(value - halfUnit, 'float8')}${lowBelow(to)} AND ${upper} < ${to}`;
    }
    case 'ne':
      return `NOT (${low} >= ${ctx.args.add(value - halfUnit, 'float8')} AND ${upper} < ${ctx.args.add(value + halfUnit, 'float8')})`;
    case 'gt':
      return high === undefined ? `${low} > ${v()}` : `(${low} > ${v()} OR ${high} > ${v()})`;
    case 'ge':
      return high === undefined ? `${low} >= ${v()}` : `(${low} >= ${v()} OR ${high} >= ${v()})`;
    case 'sa':
      return `${low} > ${v()}`;
    case 'lt':
      return `${low} < ${v()}`;
    case 'le':
      return `${low} <= ${v()}`;
    case 'eb': {
      const to = v();
      return `${upper} < ${to}${lowBelow(to)}`;
    }
    case 'ap': {
      const margin = Math.max(Math.abs(value) * 0.1, halfUnit);
      const from = ctx.args.add(value - margin, 'float8');
      const to = ctx.args.add(value + margin, 'float8');
      const lowWithin = `${low} >= ${from} AND ${low} <= ${to}`;
      // A range starting below the approximate range overlaps it when its high reaches it.
      return high === undefined ? lowWithin : `((${lowWithin}) OR (${high} >= ${from} AND ${low} < ${from}))`;
    }
  }
}

interface QuantityColumns {
  value: string;
  system: string;
  unit: string;
  /** The nullable column of a Range's high (quantity_index.high, composite_index.highN); absent where no row holds a Range. */
  high?: string;
}

function quantityColumns(x: string): QuantityColumns {
  return { value: `${x}.value`, system: `${x}.system`, unit: `${x}.unit`, high: `${x}.high` };
}

function quantityCondition(name: string, raw: string, cols: QuantityColumns, ctx: CompileContext): string {
  const parts = splitPipe(raw);
  if (parts.length !== 1 && parts.length !== 3) {
    throw errors.invalid(`Invalid quantity "${raw}" for ${name}: use [prefix]value, or [prefix]value|system|code`, name);
  }
  const { prefix, value, halfUnit } = parseNumberValue(name, parts[0]);
  const conditions = [numberComparison(prefix, value, halfUnit, cols.value, ctx, cols.high)];
  if (parts.length === 3) {
    const [, system, code] = parts.map(unescape);
    if (system !== '') conditions.push(`${cols.system} = ${ctx.args.add(system)}`);
    if (code !== '') conditions.push(`${cols.unit} = ${ctx.args.add(code)}`);
  }
  return conditions.join(' AND ');
}

// reference ---------------------------------------------------------------------------------------

interface ReferenceColumns {
  targetType: string;
  targetId: string;
  url: string;
}

function referenceColumns(x: string): ReferenceColumns {
  return { targetType: `${x}."targetType"`, targetId: `${x}."targetId"`, url: `${x}.url` };
}

function referenceCondition(name: string, modifier: string | undefined, value: string, cols: ReferenceColumns, ctx: CompileContext): string {
  let typeFilter: string | undefined;
  if (modifier !== undefined) {
    if (!isResourceType(modifier)) throw unsupportedModifier(name, modifier, 'reference');
    typeFilter = modifier;
  }
  const cap = (text: string): string => ctx.args.add(capUtf8(text, MAX_INDEXED_VALUE_BYTES));
  let local = value;
  if (value.startsWith(`${ctx.fhirBase}/`)) local = value.slice(ctx.fhirBase.length + 1);
  if (/^[A-Za-z0-9\-.]{1,64}$/.test(local)) {
    // A bare id: of the :Type given, or of any type.
    const typeCondition = typeFilter ? ` AND ${cols.targetType} = ${ctx.args.add(typeFilter)}` : '';
    return `${cols.targetId} = ${cap(local)}${typeCondition}`;
  }
  const target = parseReference(local);
  if (target && target.url === null && target.targetType && target.targetId) {
    if (typeFilter && typeFilter !== target.targetType) return 'false';
    return `${cols.targetId} = ${cap(target.targetId)} AND ${cols.targetType} = ${ctx.args.add(target.targetType)}`;
  }
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value)) {
    throw errors.invalid(`Invalid reference "${value}" for ${name}: use Type/id, id or an absolute URL`, name);
  }
  return `${cols.url} = ${cap(value)}`;
}

// uri ---------------------------------------------------------------------------------------------

function uriCondition(name: string, modifier: string | undefined, value: string, column: string, ctx: CompileContext): string {
  const capped = capUtf8(value, MAX_INDEXED_VALUE_BYTES);
  switch (modifier) {
    case undefined:
      return `${column} = ${ctx.args.add(capped)}`;
    case 'below':
      return `${column} LIKE ${ctx.args.add(`${likeEscape(capped)}%`)}`;
    case 'above':
      // The stored uri is a prefix of the value (the value is "below" the stored one).
      return `${ctx.args.add(capped)} LIKE (replace(replace(replace(${column}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')`;
    default:
      throw unsupportedModifier(name, modifier, 'uri');
  }
}

// chains and _has ---------------------------------------------------------------------------------

function nextDepth(ctx: CompileContext, name: string): CompileContext {
  if (ctx.depth >= MAX_CHAIN_DEPTH) throw errors.invalid(`Chain "${name}" is too deep: at most ${MAX_CHAIN_DEPTH} levels`, name);
  return { ...ctx, depth: ctx.depth + 1 };
}

/**
 * `subject:Patient.name=x`: a reference whose target matches the rest of the chain. Targets are
 * looked for in the project of the referencing resource (references never cross projects), which
 * also lets every level use the project-first indexes.
 */
function compileChain(name: string, dot: number, value: string, types: readonly string[], alias: string, ctx: CompileContext): string {
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
function compileHas(name: string, value: string, _types: readonly string[], alias: string, ctx: CompileContext): string {
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
