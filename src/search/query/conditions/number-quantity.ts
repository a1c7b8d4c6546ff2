import type { SearchParameter } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import type { CompileContext, RowsOf } from './types.js';
import { parseNumberValue, splitOr, splitPipe, unescape, type Prefix } from '../values.js';
import { firstOfEach, noModifier, orderedRowsOfCode, orJoin, rowsOfCode, rowsOfEachCode } from './shared.js';

/** A number parameter's values on its index rows `x` (no modifiers); a Range keeps its high in `high`. */
export function numberParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  noModifier(name, modifier, 'number');
  return rows(orJoin(values.map((v) => numberCondition(name, v, `${x}.value`, ctx, `${x}.high`))));
}

/** A quantity parameter's values on its index rows `x` (no modifiers). */
export function quantityParameter(name: string, modifier: string | undefined, values: readonly string[], rows: RowsOf, x: string, ctx: CompileContext): string {
  noModifier(name, modifier, 'quantity');
  return rows(orJoin(values.map((v) => quantityCondition(name, v, quantityColumns(x), ctx))));
}

/** `high`: the nullable column of a Range's high (number_index.high, composite_index.highN). */
export function numberCondition(name: string, raw: string, column: string, ctx: CompileContext, high?: string): string {
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

export interface QuantityColumns {
  value: string;
  system: string;
  unit: string;
  /** The nullable column of a Range's high (quantity_index.high, composite_index.highN); absent where no row holds a Range. */
  high?: string;
}

export function quantityColumns(x: string): QuantityColumns {
  return { value: `${x}.value`, system: `${x}.system`, unit: `${x}.unit`, high: `${x}.high` };
}

export function quantityCondition(name: string, raw: string, cols: QuantityColumns, ctx: CompileContext): string {
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

/**
 * The index table of a parameter of `kind` (no modifier) when `value` is a number or quantity
 * comparison with one value that reads a range of the index's values (any prefix but `ne`), else
 * undefined (numericRangeMatches).
 */
export function numericRangeTable(kind: SearchParameter['type'], value: string): 'number_index' | 'quantity_index' | undefined {
  const values = splitOr(value);
  if (values.length !== 1 || values[0].startsWith('ne')) return undefined;
  return kind === 'number' ? 'number_index' : kind === 'quantity' ? 'quantity_index' : undefined;
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
  const select = (codeRows: string) => `SELECT w."resourceId", w.value FROM ${table} w WHERE ${codeRows} AND ${condition}`;
  const rows =
    window === undefined
      ? rowsOfEachCode(ctx.args.add(projectId), type, name, ctx, select)
      : orderedRowsOfCode(ctx.args.add(projectId), type, name, ctx, select, 'w.value, w."resourceId"', 'u.value, u."resourceId"', ctx.args.add(window));
  return firstOfEach(rows, 'min(m.value)', true);
}

/** Whether some row of a number or quantity parameter in the project holds a Range (a partial index on the highs answers). */
export function numericRangesExist(table: 'number_index' | 'quantity_index', name: string, type: string, projectId: string, ctx: CompileContext): string {
  return (
    `SELECT EXISTS (SELECT 1 FROM ${table} w WHERE ${rowsOfCode(projectId, type, name, ctx)} AND w.high IS NOT NULL) AS ranged`
  );
}
