import { errors, OperationOutcomeError } from '../../../fhir/outcome.js';
import { capUtf8, MAX_INDEXED_SYSTEM_BYTES, MAX_INDEXED_VALUE_BYTES, normalise } from '../../../indexing/text.js';
import type { CompileContext, RowsOf } from './types.js';
import { likeEscape } from '../sql-builder.js';
import { splitOr, splitPipe, unescape } from '../values.js';
import { firstOfEach, orderedRowsOfCode, orJoin, rowsOfEachCode, unsupportedModifier } from './shared.js';

/** Columns a token condition reads: token_index's own, or a composite row's component. */
export interface TokenColumns {
  system: string;
  value: string;
  /** Absent where there is no display text (composite components): `:text` is refused. */
  text?: string;
}

export function tokenColumns(x: string): TokenColumns {
  return { system: `${x}.system`, value: `${x}.value`, text: `${x}.text` };
}

/** A token parameter's values on its index rows `x`; `:not` and `:not-in` also find resources without any value (search.html, token `:not`). */
export function tokenParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  if (modifier === 'not') {
    return `NOT ${rows(orJoin(values.map((v) => tokenCondition(name, undefined, v, tokenColumns(x), ctx))))}`;
  }
  if (modifier === 'not-in') {
    return `NOT ${rows(orJoin(values.map((v) => tokenCondition(name, 'in', v, tokenColumns(x), ctx))))}`;
  }
  const point = modifier === undefined && values.length === 1 && fixesSystem(values[0]);
  return rows(orJoin(values.map((v) => tokenCondition(name, modifier, v, tokenColumns(x), ctx))), undefined, point);
}

/** Whether a token value names its code and its system (`system|code`) or its lack of one (`|code`): every column of the value index before resourceId. */
function fixesSystem(raw: string): boolean {
  const parts = splitPipe(raw);
  return parts.length === 2 && parts[1] !== '';
}

export function tokenCondition(name: string, modifier: string | undefined, raw: string, cols: TokenColumns, ctx: CompileContext): string {
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
 * search before compiling (src/search/plan/value-set-discovery.ts): the codes travel as two
 * arrays, so the index serves `value = ANY(...)`.
 */
function valueSetCondition(name: string, url: string, cols: TokenColumns, ctx: CompileContext): string {
  if (url === '') throw errors.invalid(`Empty value in search parameter ${name}: give a ValueSet's canonical URL`, name);
  const expansion = ctx.valueSets?.get(url);
  if (expansion === undefined) {
    // The discovery pass collects the value sets a search needs before they are expanded.
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

/** A token value with a code (`code` or `system|code`), not a whole system (`system|`). */
export function namesTokenCode(raw: string): boolean {
  const parts = splitPipe(raw);
  return parts[parts.length - 1] !== '';
}

/**
 * Whether a token parameter's value (no modifier) is a match on one code (`code`, `|code` or
 * `system|code`): rows its index lists by system, then resource (tokenCodeMatches).
 */
export function isOneTokenCode(value: string): boolean {
  const values = splitOr(value);
  return values.length === 1 && namesTokenCode(values[0]);
}

/**
 * The resources of one project and type matching a token code (isOneTokenCode), each once with
 * its first matching system (`first`), ordered by it, then id: the order of the token index
 * (projectId, resourceType, code, value, system, resourceId), so that with `window` (rows of the
 * index read, in that order) the match stops early and is the beginning of the whole match, as
 * stringPrefixMatches does for a prefix. A value without a system sorts last, as in the index.
 */
export function tokenCodeMatches(name: string, value: string, type: string, projectId: string, ctx: CompileContext, window?: number): string {
  const condition = tokenCondition(name, undefined, value, tokenColumns('w'), ctx);
  const select = (codeRows: string) => `SELECT w."resourceId", w.system FROM token_index w WHERE ${codeRows} AND ${condition}`;
  const rows =
    window === undefined
      ? rowsOfEachCode(ctx.args.add(projectId), type, name, ctx, select)
      : orderedRowsOfCode(ctx.args.add(projectId), type, name, ctx, select, 'w.system, w."resourceId"', 'u.system, u."resourceId"', ctx.args.add(window));
  return firstOfEach(rows, 'min(m.system)', true);
}

/** How many index rows a token code has, counting no further than `limit` (whether a window of that many holds them all). */
export function tokenCodeRowCount(name: string, value: string, type: string, projectId: string, ctx: CompileContext, limit: number): string {
  return `SELECT count(*)::int AS n FROM (${tokenCodeRowsIn(name, value, type, ctx.args.add(projectId), ctx, limit)}) c`;
}

/**
 * The resources of up to `limit` index rows of a token code in one project (`project`: its id as
 * an SQL expression), a union parameter's codes each read by its own branch, each in the order of
 * the token value index after its equal columns: with statistics saying a value is common
 * (`status=final`), PostgreSQL read an unordered LIMIT by a sequential scan, expecting to meet its
 * rows at once, and filtered millions of other projects' rows first; in index order the scan stops
 * after the limit. One order over the whole union made it sort every branch's rows, so each branch
 * has its own limit.
 */
export function tokenCodeRowsIn(name: string, value: string, type: string, project: string, ctx: CompileContext, limit: number): string {
  const condition = tokenCondition(name, undefined, value, tokenColumns('w'), ctx);
  const select = (codeRows: string) => `SELECT w."resourceId" FROM token_index w WHERE ${codeRows} AND ${condition}`;
  return orderedRowsOfCode(project, type, name, ctx, select, 'w.system, w."resourceId"', 'u."resourceId"', ctx.args.add(limit));
}
