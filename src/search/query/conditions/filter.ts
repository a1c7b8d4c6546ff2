import { errors, issue, OperationOutcomeError, outcome } from '../../../fhir/outcome.js';
import { parseFilter, type FilterExpression, type FilterOperator } from '../filter-parser.js';
import { notSupported } from './shared.js';
import type { CompileContext, ResolvedParameter } from './types.js';

/**
 * `_filter`: each comparison becomes the search parameter it names, with the modifier or prefix
 * its operator stands for, compiled as REST compiles that parameter (same indexes, values and
 * errors); `and`, `or` and `not` join the conditions in SQL. The conditions are told to no
 * `onRows` listener: a row test under `or` or `not` cannot drive a page or a count.
 */

/** The modifier a filter's `ew` on a string parameter compiles to; REST refuses it (resolveParameter). */
export const ENDS_WITH_MODIFIER = 'ends-with';

/** The two entry points of conditions.ts, passed in (it imports this file). */
export interface FilterCompiler {
  resolve: (name: string, types: readonly string[], ctx: CompileContext) => ResolvedParameter;
  compile: (name: string, resolved: ResolvedParameter, value: string, types: readonly string[], alias: string, ctx: CompileContext) => string;
}

/** How one comparison reads as a REST parameter: a modifier, a value, and whether it is negated. */
interface Translation {
  modifier?: string;
  value: string;
  negate?: boolean;
}

/** The REST form of each operator a parameter type takes. */
type Forms = Partial<Record<FilterOperator, Omit<Translation, 'value'>>>;

const STRING_FORMS: Forms = {
  eq: { modifier: 'exact' },
  ne: { modifier: 'exact', negate: true },
  co: { modifier: 'contains' },
  sw: {},
  ew: { modifier: ENDS_WITH_MODIFIER },
};

const PREFIX_OPERATORS = new Set<FilterOperator>(['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap']);

export function compileFilter(text: string, types: readonly string[], alias: string, ctx: CompileContext, compiler: FilterCompiler): string {
  const inner: CompileContext = { ...ctx, onRows: undefined };
  const walk = (expression: FilterExpression): string => {
    switch (expression.kind) {
      case 'compare':
        return compileComparison(expression, types, alias, inner, compiler);
      case 'not':
        return `NOT (${walk(expression.child)})`;
      default:
        return `(${expression.children.map(walk).join(expression.kind === 'and' ? ' AND ' : ' OR ')})`;
    }
  };
  return walk(parseFilter(text));
}

type Comparison = Extract<FilterExpression, { kind: 'compare' }>;

function compileComparison(comparison: Comparison, types: readonly string[], alias: string, ctx: CompileContext, compiler: FilterCompiler): string {
  const { path, operator, value, at } = comparison;
  try {
    if (path.includes('.') || path.includes(':') || path === '_filter' || path === '_has') {
      throw notSupported(`"${path}": chains, modifiers and _has are not supported inside _filter (use them as search parameters)`, '_filter');
    }
    const resolved = compiler.resolve(path, types, ctx);
    const translation = translate(resolved, operator, value);
    const name = translation.modifier ? `${path}:${translation.modifier}` : path;
    const target = resolved.kind === 'indexed' || resolved.kind === 'id' ? { ...resolved, modifier: translation.modifier } : resolved;
    const condition = compiler.compile(name, target, translation.value, types, alias, ctx);
    return translation.negate ? `NOT (${condition})` : condition;
  } catch (error) {
    throw located(error, `${path} ${operator} ${value}`, at);
  }
}

/** The REST form of `operator value` on a parameter resolved as `resolved`, or a 400 saying why there is none. */
function translate(resolved: ResolvedParameter, operator: FilterOperator, value: string): Translation {
  const type = resolved.kind === 'indexed' ? resolved.param.type : resolved.kind;
  if (operator === 'pr' && resolved.kind === 'indexed') {
    if (value !== 'true' && value !== 'false') throw errors.invalid('pr takes true or false', '_filter');
    return { modifier: 'missing', value: value === 'true' ? 'false' : 'true' };
  }
  switch (type) {
    case 'string':
      return byOperator(operator, type, STRING_FORMS, escape(value, true));
    case 'token':
      return byOperator(operator, type, { eq: {}, ne: { negate: true }, in: { modifier: 'in' }, ni: { modifier: 'not-in' } }, escape(value, false));
    case 'reference':
      return byOperator(operator, type, { eq: {}, re: {}, ne: { negate: true } }, escape(value, false));
    case 'uri':
    case 'id':
    case 'composite':
      return byOperator(operator, type === 'id' ? 'token' : type, { eq: {}, ne: { negate: true } }, escape(value, type === 'uri'));
    case 'date':
    case 'number':
    case 'quantity':
    case 'lastUpdated':
      if (!PREFIX_OPERATORS.has(operator)) throw unsupportedOperator(operator, type === 'lastUpdated' ? 'date' : type);
      return { value: operator + escape(value, type !== 'quantity') };
    default:
      throw notSupported(`This search parameter cannot be used in _filter`, '_filter');
  }
}

function byOperator(operator: FilterOperator, type: string, table: Forms, value: string): Translation {
  const form = table[operator];
  if (!form) throw unsupportedOperator(operator, type);
  return { ...form, value };
}

function unsupportedOperator(operator: FilterOperator, type: string): OperationOutcomeError {
  return notSupported(`Operator ${operator} is not supported on ${type} parameters in _filter`, '_filter');
}

/** A filter value as one REST value: its commas are not alternatives (nor `|` a separator, where `pipe`). */
function escape(value: string, pipe: boolean): string {
  return value.replace(pipe ? /[\\,$|]/g : /[\\,$]/g, '\\$&');
}

/** An error of one comparison, its text prefixed with where the comparison stands in the filter. */
function located(error: unknown, comparison: string, at: number): unknown {
  if (!(error instanceof OperationOutcomeError)) return error;
  const first = error.outcome.issue[0];
  const text = `_filter at character ${at + 1} ("${comparison}"): ${first?.details?.text ?? error.message}`;
  return new OperationOutcomeError(outcome([issue(first?.code ?? 'invalid', text, '_filter')]), error.status);
}
