import type { SearchParameter } from '../../../fhir/definitions.js';
import { errors } from '../../../fhir/outcome.js';
import { MAX_COMPONENTS } from '../../../indexing/row-types.js';
import { compositeCodes, findCompositePlan, type CompositePlan } from '../../../indexing/composite.js';
import { normaliseForIndex } from '../../../indexing/text.js';
import type { CompileContext } from './types.js';
import { likeEscape } from '../sql-builder.js';
import { splitComponents, splitOr, unescape } from '../values.js';
import { dateCondition } from './date.js';
import { numberCondition, quantityCondition } from './number-quantity.js';
import { referenceCondition } from './reference.js';
import { codesArg, missingCondition, notSupported, orJoin, ownRowsExist, rowsExist, rowsOfCodes, unsupportedModifier } from './shared.js';
import { tokenCondition } from './token.js';
import { uriCondition } from './uri.js';

/**
 * `code-value-quantity=http://loinc.org|8480-6$gt100`: components separated by `$`, each matched by
 * its own kind's rules, all in one row of composite_index (one element of the resource). Commas
 * separate alternatives, as everywhere. No modifiers but `:missing`.
 */
export function compileComposite(
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
  const x = `x${ctx.depth}`;
  const codes = [...new Set(types.flatMap((type) => compositeCodes(type, code)))];
  const rows = (condition: string | undefined) => rowsExist(rowsOfCodes('composite_index', codes, ctx), codesArg(codes, ctx.args), alias, x, condition, ctx.perRow);
  if (modifier === 'missing') return missingCondition(name, value, () => rows(undefined), () => ownRowsExist('composite_index', codesArg(codes, ctx.args), alias, x));
  if (modifier !== undefined) throw unsupportedModifier(name, modifier, 'composite');
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
  return rows(orJoin(alternatives));
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
